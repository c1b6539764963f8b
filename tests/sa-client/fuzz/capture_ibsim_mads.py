#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only OR Linux-OpenIB
# Captures real SA MADs for the fuzz corpora: starts ibsim on a small fabric with OpenSM (the
# test bed's programs, umad2sim preloaded), runs saquery queries at a CA under strace, and
# writes every SA MAD (management class 0x03) that saquery sent (requests) or received
# (OpenSM's answers) as one file per MAD. umad2sim carries each MAD to ibsim in a message that
# ends with the 256 MAD bytes; strace shows the message bytes. With SMP_DIR it also runs
# smpquery at the same CA and writes the 64-byte SMP data of each answer (PortInfo, SL2VL,
# VLArbitration, P_Key blocks), what the fabric/ decoders read.
#
#   capture_ibsim_mads.py REQUEST_DIR RESPONSE_DIR [SMP_DIR]
#
# Needs ibsim, opensm, saquery, smpquery, strace and libumad2sim (scripts/install-deps.sh).
# KEEP=1 keeps the working directory (ibsim, OpenSM logs and the strace files).
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

UMAD2SIM = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so"
NET = """\
caguid=0x2c90300a00000
Ca 1 "sm01" # "sm01 HCA-1"
[1] "leaf01"[1] w=2 s=4 lid 1

caguid=0x2c90300a00010
Ca 1 "node001" # "node001 HCA-1"
[1] "leaf01"[2] w=2 s=4 lid 2

caguid=0x2c90300a00020
Ca 1 "node002" # "node002 HCA-1"
[1] "leaf01"[3] w=2 s=2 lid 3

caguid=0x2c90300a00030
Ca 1 "node003" # "node003 HCA-1"
[1] "leaf01"[4] w=1 s=1 lid 4

Switch 8 "leaf01" # "leaf01 switch" enhanced port 0 lid 10
[1] "sm01"[1] w=2 s=4
[2] "node001"[1] w=2 s=4
[3] "node002"[1] w=2 s=2
[4] "node003"[1] w=1 s=1
"""
QOS_POLICY = """\
qos-levels
qos-level
name: DEFAULT
sl: 0
end-qos-level
qos-level
name: Storage
sl: 3
mtu-limit: 4
packet-life: 12
end-qos-level
end-qos-levels
qos-match-rules
qos-match-rule
service-id: 0x1000000000000-0x1ffffffffffff
qos-level-name: Storage
end-qos-match-rule
qos-match-rule
qos-class: 4
qos-level-name: Storage
end-qos-match-rule
end-qos-match-rules
"""
QUERIES = {
    "cpi": ["-c"],
    "path_all": ["-p"],
    "path_lids": ["-p", "--slid", "2", "--dlid", "3"],
    "path_service_id": ["-p", "--slid", "2", "--dlid", "3", "--service_id", "0x1000000000010"],
    "path_qos_class": ["-p", "--slid", "2", "--dlid", "3", "-Q", "4"],
    "path_selectors": ["-p", "--slid", "2", "--dlid", "3", "-M", "3", "-R", "2", "--pkey",
                       "0xffff", "-r", "1", "-n", "1"],
    "path_gids": ["-p", "--sgid", "fe80::2:c903:a:11", "--dgid", "fe80::2:c903:a:21"],
    "path_src_to_dst": ["--src-to-dst", "2:4"],
    "node_records": ["-N"],
    "portinfo_sm": ["-s"],
    "link_records": ["-x"],
    "mcmember": ["-g"],
    "service_records": ["-S"],
    "sl2vl": ["SL2VL"],
    "pkey_table": ["PKTR"],
    "switchinfo": ["SWIR"],
    "sminfo": ["SMIR"],
}
SMP_QUERIES = {
    "portinfo_ca": ["portinfo", "2", "1"],
    "portinfo_switch0": ["portinfo", "10", "0"],
    "portinfo_switch_port": ["portinfo", "10", "3"],
    "sl2vl_ca": ["sl2vl", "2", "1"],
    "sl2vl_switch": ["sl2vl", "10", "2", "3"],
    "vlarb_ca": ["vlarb", "2", "1"],
    "vlarb_switch": ["vlarb", "10", "4"],
    "pkeys_ca": ["pkeys", "2", "1"],
    "pkeys_switch": ["pkeys", "10", "1"],
}
HEX = re.compile(r'"((?:\\x[0-9a-f]{2})+)"')


def mads_in(strace_text, classes=(0x03,)):
    """(direction, bytes) of each MAD of `classes` in umad2sim's socket traffic."""
    out = []
    for line in strace_text.splitlines():
        call = line.split("(", 1)[0].split()[-1] if "(" in line else ""
        if call not in ("sendto", "send", "write", "recvfrom", "recv", "read", "sendmsg",
                        "recvmsg"):
            continue
        for m in HEX.finditer(line):
            data = bytes.fromhex(m.group(1).replace("\\x", ""))
            if len(data) < 256:
                continue
            mad = data[-256:]
            if mad[0] == 1 and mad[1] in classes:
                out.append(("out" if call.startswith(("send", "write")) else "in", mad))
    return out


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit("usage: capture_ibsim_mads.py REQUEST_DIR RESPONSE_DIR [SMP_DIR]")
    req_dir, resp_dir = sys.argv[1:3]
    smp_dir = sys.argv[3] if len(sys.argv) == 4 else None
    os.makedirs(req_dir, exist_ok=True)
    os.makedirs(resp_dir, exist_ok=True)
    work = tempfile.mkdtemp(prefix="rdmaqos-capture-")
    sock = "rdmaqos-capture-" + os.path.basename(work)
    with open(os.path.join(work, "net"), "w") as f:
        f.write(NET)
    with open(os.path.join(work, "qos-policy.conf"), "w") as f:
        f.write(QOS_POLICY)
    open(os.path.join(work, "opensm.conf"), "w").close()
    env = dict(os.environ, IBSIM_SOCKNAME=sock)
    procs = []
    try:
        procs.append(subprocess.Popen(["ibsim", "-s", "-n", os.path.join(work, "net")], cwd=work,
                                      env=env, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL))
        for _ in range(200):
            if "@" + sock + ":ctl" in open("/proc/net/unix").read():
                break
            time.sleep(0.05)
        cenv = dict(env, SIM_HOST="sm01", LD_PRELOAD=UMAD2SIM, OSM_TMP_DIR=work,
                    OSM_CACHE_DIR=work)
        out = open(os.path.join(work, "opensm.out"), "w")
        procs.append(subprocess.Popen(["opensm", "-F", os.path.join(work, "opensm.conf"), "-f",
                                       os.path.join(work, "osm.log"), "-s", "0", "-Q", "-Y",
                                       os.path.join(work, "qos-policy.conf")], cwd=work,
                                      env=cenv, stdout=out, stderr=subprocess.STDOUT))
        qenv = dict(env, SIM_HOST="node001", LD_PRELOAD=UMAD2SIM)
        deadline = time.time() + 120
        while time.time() < deadline:
            if "Entering MASTER state" in open(os.path.join(work, "opensm.out")).read():
                r = subprocess.run(["saquery", "-p", "--slid", "2", "--dlid", "3"], cwd=work,
                                   env=qenv, capture_output=True, text=True, timeout=20)
                if "PathRecord dump" in r.stdout:
                    break
            time.sleep(0.5)
        else:
            sys.exit("capture_ibsim_mads.py: OpenSM did not answer within 120 s")
        seen = set()
        for name, args in QUERIES.items():
            trace = os.path.join(work, name + ".strace")
            subprocess.run(["strace", "-f", "-xx", "-s", "65536", "-o", trace,
                            "-e", "trace=sendto,recvfrom,sendmsg,recvmsg,write,read",
                            "saquery", *args], cwd=work, env=qenv, capture_output=True,
                           timeout=60)
            counts = {"out": 0, "in": 0}
            for direction, mad in mads_in(open(trace).read()):
                if mad in seen:
                    continue
                seen.add(mad)
                counts[direction] += 1
                suffix = "" if counts[direction] == 1 else "_%d" % counts[direction]
                target = req_dir if direction == "out" else resp_dir
                with open(os.path.join(target, "ibsim_%s%s" % (name, suffix)), "wb") as f:
                    f.write(mad)
            print("%-18s requests %d responses %d" % (name, counts["out"], counts["in"]))
        for name, args in (SMP_QUERIES.items() if smp_dir else ()):
            os.makedirs(smp_dir, exist_ok=True)
            trace = os.path.join(work, name + ".strace")
            subprocess.run(["strace", "-f", "-xx", "-s", "65536", "-o", trace,
                            "-e", "trace=sendto,recvfrom,sendmsg,recvmsg,write,read",
                            "smpquery", *args], cwd=work, env=qenv, capture_output=True,
                           timeout=60)
            answers = [m for d, m in mads_in(open(trace).read(), (0x01, 0x81))
                       if d == "in" and m[3] == 0x81]
            for i, mad in enumerate(answers):
                with open(os.path.join(smp_dir, "ibsim_%s%s" % (name, "_%d" % i if i else "")),
                          "wb") as f:
                    f.write(mad[64:128])
            print("%-18s SMP answers %d" % (name, len(answers)))
    finally:
        for p in reversed(procs):
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        if not os.environ.get("KEEP"):
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
