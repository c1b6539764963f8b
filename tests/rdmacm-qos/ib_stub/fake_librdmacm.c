// SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
/* A stand-in librdmacm.so.1 for testing the preload module's InfiniBand path without an
 * InfiniBand data path: ids on a fake InfiniBand port (by default the first umad CA, port 1, so the
 * SA query goes to OpenSM on ibsim through umad2sim), events queued per channel the way the kernel
 * queues them (RDMA_OPTION_IB_PATH raises ROUTE_RESOLVED, also on a synchronous id's private
 * channel; the channel's fd is readable while events are queued, as the kernel's is, so that a
 * caller may poll it; events may be queued by another thread, the module's route workers), and
 * every call the module makes logged as a JSON line to $FAKE_RDMACM_LOG.
 * Environment: FAKE_RDMACM_SGUID / FAKE_RDMACM_DGUID, the port GUIDs of the two ends;
 * FAKE_RDMACM_DEVICE / FAKE_RDMACM_PORT, the device and port the ids are on (default: the first
 * umad CA, port 1), for hosts with several devices or ports. FAKE_RDMACM_GUIDS, a file of port
 * GUIDs (hex, one a line): an IPv4 destination's low 16 bits index it, so that one program
 * resolves many peers (10.0.0.5 is the sixth line's node), as ARP over IPoIB would name them.
 * fake_rdmacm_counts() says how many routes the module set (RDMA_OPTION_IB_PATH) and how many it
 * left to the kernel's resolution, for a program that resolves too many to log. */
#include <endian.h>
#include <errno.h>
#include <infiniband/umad.h>
#include <infiniband/verbs.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

/* Per channel: an event loop may resolve a hundred peers on one channel at once. */
#define MAX_EVENTS 1024
#define MAX_GUIDS 65536

/* The module's route workers queue events while the program's thread takes them. */
static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;

struct fake_channel {
  struct rdma_event_channel channel; /* first: the program's pointer */
  struct rdma_cm_event* queue[MAX_EVENTS];
  int head, count;
  int private_to_sync_id;
};

static int paths_set, kernel_routes;

void fake_rdmacm_counts(int* paths, int* kernel) {
  pthread_mutex_lock(&queue_lock);
  *paths = paths_set;
  *kernel = kernel_routes;
  pthread_mutex_unlock(&queue_lock);
}

static uint64_t* guid_table;
static size_t guid_count;

static void load_guids(void) {
  const char* path = getenv("FAKE_RDMACM_GUIDS");
  char line[64];
  FILE* f;
  if (path == NULL || (f = fopen(path, "r")) == NULL) return;
  guid_table = calloc(MAX_GUIDS, sizeof(*guid_table));
  while (guid_table != NULL && guid_count < MAX_GUIDS && fgets(line, sizeof(line), f) != NULL)
    if (line[0] != '\n') guid_table[guid_count++] = strtoull(line, NULL, 16);
  fclose(f);
}

static void log_line(const char* fmt, ...) {
  const char* path = getenv("FAKE_RDMACM_LOG");
  FILE* f;
  va_list ap;
  if (path == NULL || (f = fopen(path, "a")) == NULL) return;
  va_start(ap, fmt);
  vfprintf(f, fmt, ap);
  va_end(ap);
  fputc('\n', f);
  fclose(f);
}

static uint8_t fake_port(void) {
  const char* port = getenv("FAKE_RDMACM_PORT");
  return port != NULL ? (uint8_t)atoi(port) : 1;
}

static int fake_query_port(struct ibv_context* ctx, uint8_t port, struct ibv_port_attr* attr,
                           size_t len) {
  (void)ctx;
  if (port != fake_port()) return EINVAL;
  memset(attr, 0, len);
  attr->state = IBV_PORT_ACTIVE;
  attr->link_layer = IBV_LINK_LAYER_INFINIBAND;
  return 0;
}

static struct ibv_context* fake_context(void) {
  static struct verbs_context vctx;
  static struct ibv_device device;
  static char cas[UMAD_MAX_DEVICES][UMAD_CA_NAME_LEN];
  if (vctx.sz == 0) {
    const char* named = getenv("FAKE_RDMACM_DEVICE");
    if (named != NULL)
      snprintf(device.name, sizeof(device.name), "%s", named);
    else if (umad_get_cas_names(cas, UMAD_MAX_DEVICES) > 0)
      snprintf(device.name, sizeof(device.name), "%s", cas[0]);
    vctx.sz = sizeof(vctx);
    vctx.query_port = fake_query_port;
    vctx.context.abi_compat = __VERBS_ABI_IS_EXTENDED;
    vctx.context.device = &device;
  }
  return &vctx.context;
}

static void queue_event(struct rdma_cm_id* id, enum rdma_cm_event_type type) {
  struct fake_channel* ch = (struct fake_channel*)id->channel;
  struct rdma_cm_event* ev;
  if (ch == NULL || (ev = calloc(1, sizeof(*ev))) == NULL) return;
  ev->id = id;
  ev->event = type;
  pthread_mutex_lock(&queue_lock);
  if (ch->count == MAX_EVENTS) {
    pthread_mutex_unlock(&queue_lock);
    free(ev);
    return;
  }
  ch->queue[(ch->head + ch->count++) % MAX_EVENTS] = ev;
  if (ch->channel.fd >= 0) {
    uint64_t one = 1;
    (void)!write(ch->channel.fd, &one, sizeof(one));
  }
  pthread_mutex_unlock(&queue_lock);
}

struct rdma_event_channel* rdma_create_event_channel(void) {
  struct fake_channel* ch = calloc(1, sizeof(*ch));
  if (ch == NULL) return NULL;
  /* A semaphore eventfd: one count per queued event, so poll() sees what the queue holds. */
  ch->channel.fd = eventfd(0, EFD_SEMAPHORE | EFD_NONBLOCK | EFD_CLOEXEC);
  return &ch->channel;
}

void rdma_destroy_event_channel(struct rdma_event_channel* channel) {
  if (channel->fd >= 0) close(channel->fd);
  free(channel);
}

int rdma_create_id(struct rdma_event_channel* channel, struct rdma_cm_id** id, void* context,
                   enum rdma_port_space ps) {
  struct rdma_cm_id* out = calloc(1, sizeof(*out));
  if (out == NULL) return -1;
  if (channel == NULL) { /* synchronous: a private channel, as librdmacm does */
    channel = rdma_create_event_channel();
    ((struct fake_channel*)channel)->private_to_sync_id = 1;
  }
  out->channel = channel;
  out->context = context;
  out->ps = ps;
  out->qp_type = IBV_QPT_RC;
  *id = out;
  log_line("{\"call\":\"rdma_create_id\",\"synchronous\":%d}",
           ((struct fake_channel*)channel)->private_to_sync_id);
  return 0;
}

/* Moves an id to another channel; none: a private one, and the id is synchronous from now on. */
int rdma_migrate_id(struct rdma_cm_id* id, struct rdma_event_channel* channel) {
  struct fake_channel* old = (struct fake_channel*)id->channel;
  if (channel == NULL) {
    channel = rdma_create_event_channel();
    if (channel == NULL) return -1;
    ((struct fake_channel*)channel)->private_to_sync_id = 1;
  }
  id->channel = channel;
  if (old->private_to_sync_id) rdma_destroy_event_channel(&old->channel);
  log_line("{\"call\":\"rdma_migrate_id\",\"synchronous\":%d}",
           ((struct fake_channel*)channel)->private_to_sync_id);
  return 0;
}

static void set_gid(union ibv_gid* gid, const char* guid_var) {
  const char* guid = getenv(guid_var);
  gid->global.subnet_prefix = htobe64(0xfe80000000000000ULL);
  gid->global.interface_id = htobe64(guid ? strtoull(guid, NULL, 0) : 0);
}

int rdma_resolve_addr(struct rdma_cm_id* id, struct sockaddr* src, struct sockaddr* dst,
                      int timeout_ms) {
  (void)src;
  (void)timeout_ms;
  id->verbs = fake_context();
  id->port_num = fake_port();
  memcpy(&id->route.addr.dst_addr, dst,
         dst->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in));
  set_gid(&id->route.addr.addr.ibaddr.sgid, "FAKE_RDMACM_SGUID");
  set_gid(&id->route.addr.addr.ibaddr.dgid, "FAKE_RDMACM_DGUID");
  {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, load_guids);
    if (guid_count > 0 && dst->sa_family == AF_INET) {
      size_t index = be32toh(((const struct sockaddr_in*)dst)->sin_addr.s_addr) & 0xffff;
      if (index < guid_count)
        id->route.addr.addr.ibaddr.dgid.global.interface_id = htobe64(guid_table[index]);
    }
  }
  id->route.addr.addr.ibaddr.pkey = htobe16(0xffff);
  if (!((struct fake_channel*)id->channel)->private_to_sync_id)
    queue_event(id, RDMA_CM_EVENT_ADDR_RESOLVED);
  return 0;
}

/* The kernel's own route resolution: only reached when the module falls back. */
int rdma_resolve_route(struct rdma_cm_id* id, int timeout_ms) {
  (void)timeout_ms;
  pthread_mutex_lock(&queue_lock);
  ++kernel_routes;
  pthread_mutex_unlock(&queue_lock);
  log_line("{\"call\":\"rdma_resolve_route\"}");
  if (!((struct fake_channel*)id->channel)->private_to_sync_id)
    queue_event(id, RDMA_CM_EVENT_ROUTE_RESOLVED);
  return 0;
}

int rdma_set_option(struct rdma_cm_id* id, int level, int optname, void* optval, size_t optlen) {
  if (level == RDMA_OPTION_IB && optname == RDMA_OPTION_IB_PATH &&
      optlen >= sizeof(struct ibv_path_data)) {
    const struct ibv_path_data* p = optval;
    /* FAKE_RDMACM_REFUSE_PATH: the kernel refuses the path (as ucma does a record it cannot
     * use), and queues nothing. */
    if (getenv("FAKE_RDMACM_REFUSE_PATH") != NULL) {
      log_line("{\"call\":\"rdma_set_option\",\"option\":\"ib_path\",\"refused\":true}");
      errno = EINVAL;
      return -1;
    }
    log_line(
        "{\"call\":\"rdma_set_option\",\"option\":\"ib_path\",\"len\":%zu,\"flags\":%u,"
        "\"sl\":%u,\"mtu\":%u,\"service_id\":%llu}",
        optlen, p->flags, be16toh(p->path.qosclass_sl) & 0xF, p->path.mtu & 0x3F,
        (unsigned long long)be64toh(p->path.service_id));
    pthread_mutex_lock(&queue_lock);
    ++paths_set;
    pthread_mutex_unlock(&queue_lock);
    queue_event(id, RDMA_CM_EVENT_ROUTE_RESOLVED); /* the kernel does, sync ids included */
    return 0;
  }
  log_line("{\"call\":\"rdma_set_option\",\"level\":%d,\"option\":%d,\"len\":%zu}", level, optname,
           optlen);
  return 0;
}

int rdma_get_cm_event(struct rdma_event_channel* channel, struct rdma_cm_event** event) {
  struct fake_channel* ch = (struct fake_channel*)channel;
  pthread_mutex_lock(&queue_lock);
  if (ch->count == 0) {
    pthread_mutex_unlock(&queue_lock);
    errno = EAGAIN; /* a real channel would block: the test would hang instead */
    return -1;
  }
  *event = ch->queue[ch->head];
  ch->head = (ch->head + 1) % MAX_EVENTS;
  ch->count--;
  if (ch->channel.fd >= 0) {
    uint64_t one;
    (void)!read(ch->channel.fd, &one, sizeof(one));
  }
  pthread_mutex_unlock(&queue_lock);
  log_line("{\"call\":\"rdma_get_cm_event\",\"event\":\"%s\",\"sync_channel\":%d}",
           rdma_event_str((*event)->event), ch->private_to_sync_id);
  return 0;
}

int rdma_ack_cm_event(struct rdma_cm_event* event) {
  free(event);
  return 0;
}

const char* rdma_event_str(enum rdma_cm_event_type event) {
  switch (event) {
    case RDMA_CM_EVENT_ADDR_RESOLVED: return "ADDR_RESOLVED";
    case RDMA_CM_EVENT_ROUTE_RESOLVED: return "ROUTE_RESOLVED";
    default: return "OTHER";
  }
}

int rdma_connect(struct rdma_cm_id* id, struct rdma_conn_param* param) {
  (void)id;
  (void)param;
  return 0;
}

int rdma_accept(struct rdma_cm_id* id, struct rdma_conn_param* param) {
  (void)id;
  (void)param;
  return 0;
}

int rdma_destroy_id(struct rdma_cm_id* id) {
  struct fake_channel* ch = (struct fake_channel*)id->channel;
  int pending;
  pthread_mutex_lock(&queue_lock);
  pending = ch->count;
  pthread_mutex_unlock(&queue_lock);
  log_line("{\"call\":\"rdma_destroy_id\",\"pending_events\":%d,\"sync_channel\":%d}", pending,
           ch->private_to_sync_id);
  if (ch->private_to_sync_id) rdma_destroy_event_channel(id->channel);
  free(id);
  return 0;
}
