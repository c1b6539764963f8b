// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* Reads the host's layout from the environment (see host_layout.h). */
#define _GNU_SOURCE
#include "host_layout.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kMaxPorts = 32 };

static struct host_port ports[kMaxPorts];
static int port_count;
static pthread_once_t parsed = PTHREAD_ONCE_INIT;

/* One "DEVICE/PORT=NODE" entry; 0 if malformed. */
static int parse_entry(const char* entry, struct host_port* out) {
  const char* slash = strchr(entry, '/');
  const char* equals = slash != NULL ? strchr(slash, '=') : NULL;
  if (slash == NULL || equals == NULL || slash == entry || equals[1] == '\0') return 0;
  size_t device_len = (size_t)(slash - entry);
  if (device_len >= sizeof(out->device) || strlen(equals + 1) >= sizeof(out->node)) return 0;
  char* end;
  long port = strtol(slash + 1, &end, 10);
  if (end != equals || port < 1 || port >= UMAD_CA_MAX_PORTS) return 0;
  memcpy(out->device, entry, device_len);
  out->device[device_len] = '\0';
  out->port = (int)port;
  snprintf(out->node, sizeof(out->node), "%s", equals + 1);
  return 1;
}

int host_layout_parse(const char* text, struct host_port* out, int max) {
  char* copy = strdup(text);
  char* save = NULL;
  int n = 0, bad = copy == NULL;
  for (char* entry = bad ? NULL : strtok_r(copy, " \t\n", &save); entry != NULL && !bad;
       entry = strtok_r(NULL, " \t\n", &save)) {
    bad = n == max || !parse_entry(entry, &out[n]);
    for (int i = 0; i < n && !bad; ++i)
      bad = out[i].port == out[n].port && strcmp(out[i].device, out[n].device) == 0;
    ++n;
  }
  free(copy);
  return bad ? -1 : n;
}

static void parse_layout(void) {
  const char* text = getenv("UMAD_MULTI_CA");
  if (text == NULL) return;
  int n = host_layout_parse(text, ports, kMaxPorts);
  if (n < 0)
    fprintf(stderr,
            "umad_multi_ca: UMAD_MULTI_CA='%s': want DEVICE/PORT=NODE entries, each port once, at "
            "most %d: no devices\n",
            text, kMaxPorts);
  port_count = n < 0 ? 0 : n;
}

const struct host_port* host_ports(int* count) {
  pthread_once(&parsed, parse_layout);
  *count = port_count;
  return port_count > 0 ? ports : NULL;
}

const struct host_port* host_port_find(const char* device, int port) {
  int n;
  const struct host_port* all = host_ports(&n);
  if (n == 0) return NULL;
  if (device == NULL) device = all[0].device;
  for (int i = 0; i < n; ++i)
    if (all[i].port == port && strcmp(all[i].device, device) == 0) return &all[i];
  return NULL;
}

int host_port_count(const char* device) {
  int n, highest = 0;
  const struct host_port* all = host_ports(&n);
  for (int i = 0; i < n; ++i)
    if (strcmp(all[i].device, device) == 0 && all[i].port > highest) highest = all[i].port;
  return highest;
}

const char* host_sockname(void) {
  const char* name = getenv("IBSIM_SOCKNAME");
  return name != NULL ? name : "sim";
}
