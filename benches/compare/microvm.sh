#!/usr/bin/env bash
# The microvm backend (gVisor) against bare runsc and our native backend, in
# one run:
#   - ours, microvm: a session through the facade (proxies, the OCI bundle
#     of the spec, our agent as the sandbox's first process, which starts
#     each command and carries the proxies' connections over its stdio),
#     timed from launch to a warm handle;
#     EXECS sequential `/bin/true` commands, each from exec to its last
#     event (p50, p99); suspend (checkpoint to the session's directory) and
#     resume (restore); destroy. The driver is the facade's example
#     `microvm_bench`.
#   - bare runsc with the same global options (`--network=none`, a state
#     directory of its own), root `/` read-only,
#     `sleep infinity` as the first process: `run --detach`, EXECS
#     `exec /bin/true`, `checkpoint`, `restore --detach`, `kill` and
#     `delete`, each timed around the runsc process.
#   - ours, native (bubblewrap): the same driver, a warm session, for scale.
#   - ours, QEMU (QEMU=1, the default where qemu-system-x86_64 is
#     installed): the same driver with `--runtime qemu`: a guest per session
#     (the file server, QEMU, the guest's kernel and agent, its root over
#     virtio-fs), launch to a warm handle and EXECS `/bin/true`.
#   - bare QEMU booting the same kernel, with the same machine and
#     accelerator, and a busybox initramfs made here whose /init is the
#     shell on the serial console: launch is QEMU's start to the shell's
#     first answer, each exec is `/bin/true; echo MARK` (a fork and an exec
#     of busybox from the initramfs) to its mark coming back.
#     This host has no working hardware virtualization, so both are
#     emulated (TCG).
# Prints each figure's median over ROUNDS rounds and the ratios; targets:
# launch and exec p50 at most 1.2x bare runsc, and at most 1.5x bare QEMU. SMOKE=1: a dev build, one
# round of 10 execs, nothing timed asserted. Needs runsc (gVisor) and
# bubblewrap. Exits non-zero when a run fails.
set -euo pipefail
cd "$(dirname "$0")/../.."
. benches/compare/support/common.sh
if smoke; then
    EXECS=${EXECS:-10} ROUNDS=${ROUNDS:-1} profile=dev dir=debug
else
    EXECS=${EXECS:-300} ROUNDS=${ROUNDS:-3} profile=release dir=release
fi
need runsc bwrap python3
QEMU=${QEMU:-$(command -v qemu-system-x86_64 >/dev/null && echo 1 || echo 0)}
RUNSC=$(command -v runsc)
cargo build --locked -q --profile "$profile" -p asbx-agent-sandbox --example microvm_bench
DRIVER="$TARGET_DIR/$dir/examples/microvm_bench"
[ -x "$DRIVER" ] || die "could not build the microvm_bench example"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# bare ROUND: bare runsc's figures as name=milliseconds pairs.
bare() {
    python3 - "$RUNSC" "$EXECS" "$work/bare-$1" <<'PY'
import json, os, subprocess, sys, time

runsc, execs, d = sys.argv[1], int(sys.argv[2]), sys.argv[3]
bundle, image = os.path.join(d, "bundle"), os.path.join(d, "image")
os.makedirs(bundle)
os.makedirs(image)
cid = "bare-bench-%d" % os.getpid()
glob = ["--root=" + os.path.join(d, "state"), "--network=none"]
if os.geteuid() != 0:
    glob.append("--rootless")
config = {
    "ociVersion": "1.0.0",
    "process": {"terminal": False, "user": {"uid": 0, "gid": 0}, "cwd": "/",
                "args": ["/bin/sleep", "infinity"], "env": ["PATH=/usr/bin:/bin"]},
    "root": {"path": "/", "readonly": True},
    "hostname": "bench",
    "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
               {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs"},
               {"destination": "/dev", "type": "tmpfs", "source": "tmpfs"}],
    "linux": {"namespaces": [{"type": t} for t in ("pid", "ipc", "uts", "mount", "network")]},
}
with open(os.path.join(bundle, "config.json"), "w") as f:
    json.dump(config, f)
log = open(os.path.join(d, "log"), "ab")

def timed(*args):
    t = time.perf_counter()
    r = subprocess.run([runsc, *glob, *args], stdin=subprocess.DEVNULL, stdout=log, stderr=log)
    ms = (time.perf_counter() - t) * 1000
    if r.returncode != 0:
        log.flush()
        sys.stderr.write(open(os.path.join(d, "log")).read()[-2000:])
        sys.exit("runsc %s failed (%d)" % (args[0], r.returncode))
    return ms

out = {"launch": timed("run", "--detach", "--bundle", bundle, cid)}
times = sorted(timed("exec", cid, "/bin/true") for _ in range(execs))
pick = lambda p: times[round((len(times) - 1) * p)]
out["exec_p50"], out["exec_p99"] = pick(0.5), pick(0.99)
out["suspend"] = timed("checkpoint", "--image-path=" + image, cid) + timed("delete", cid)
out["resume"] = timed("restore", "--detach", "--image-path=" + image, "--bundle", bundle, cid)
t = timed("kill", cid, "KILL")
out["destroy"] = t + timed("delete", "--force", cid)
print(" ".join("%s=%.2f" % kv for kv in out.items()))
PY
}

# bare_qemu: bare QEMU's figures as name=milliseconds pairs.
bare_qemu() {
    python3 - "$EXECS" "$work/qemu-bare" <<'PY'
import glob, os, select, shutil, subprocess, sys, time

execs, d = int(sys.argv[1]), sys.argv[2]
os.makedirs(os.path.join(d, "root/bin"), exist_ok=True)
kernel = sorted(glob.glob("/boot/vmlinuz-*"))[-1]
shutil.copy("/bin/busybox", os.path.join(d, "root/bin/busybox"))
os.symlink("busybox", os.path.join(d, "root/bin/sh"))
os.symlink("busybox", os.path.join(d, "root/bin/true"))
with open(os.path.join(d, "root/init"), "w") as f:
    f.write("#!/bin/sh\nexec /bin/sh\n")
os.chmod(os.path.join(d, "root/init"), 0o755)
initrd = os.path.join(d, "initrd")
subprocess.run("cd %s/root && find . | cpio -o -H newc --quiet > %s" % (d, initrd), shell=True, check=True)
khz = None
for line in open("/proc/cpuinfo"):
    if line.startswith("cpu MHz"):
        khz = round(float(line.split(":")[1]) * 1000)
        break
append = "console=ttyS0 quiet panic=-1" + (" tsc_early_khz=%d" % khz if khz else "")
t0 = time.perf_counter()
q = subprocess.Popen(["qemu-system-x86_64", "-M", "microvm,x-option-roms=off", "-accel", "tcg",
                      "-m", "256", "-smp", "1", "-nodefaults", "-no-user-config", "-display", "none",
                      "-no-reboot", "-kernel", kernel, "-initrd", initrd, "-append", append,
                      "-serial", "stdio"],
                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
buf = b""

def ask(cmd, mark, limit=60):
    global buf
    q.stdin.write(cmd)
    q.stdin.flush()
    end = time.time() + limit
    while mark not in buf:
        if time.time() > end or q.poll() is not None:
            sys.exit("bare QEMU did not answer %r" % mark)
        r, _, _ = select.select([q.stdout], [], [], 0.5)
        if r:
            buf += os.read(q.stdout.fileno(), 65536)
    buf = buf[buf.index(mark) + len(mark):]

# The echo is the shell's answer (the terminal echoes the line first).
ask(b"stty -echo; echo READ''Y\n", b"READY")
out = {"launch": (time.perf_counter() - t0) * 1000}
times = []
for i in range(execs):
    t = time.perf_counter()
    ask(b"/bin/true; echo D''%d\n" % i, b"D%d\r" % i)
    times.append((time.perf_counter() - t) * 1000)
times.sort()
pick = lambda p: times[round((len(times) - 1) * p)]
out["exec_p50"], out["exec_p99"] = pick(0.5), pick(0.99)
t = time.perf_counter()
q.kill()
q.wait()
out["destroy"] = (time.perf_counter() - t) * 1000
print(" ".join("%s=%.2f" % kv for kv in out.items()))
PY
}

declare -A ALL
add() { # add TOOL LINE: appends each name=value of LINE to ALL[TOOL.name]
    local kv
    for kv in $2; do
        case $kv in backend=*) continue ;; esac
        ALL[$1.${kv%%=*}]+="${kv#*=} "
    done
}
for round in $(seq "$ROUNDS"); do
    line=$("$DRIVER" --backend microvm --execs "$EXECS") || die "ours (microvm) failed"
    echo "round $round ours-microvm: $line"
    add ours "$line"
    line=$(bare "$round") || die "bare runsc failed"
    echo "round $round bare-runsc:   $line"
    add bare "$line"
    line=$("$DRIVER" --backend native --execs "$EXECS") || die "ours (native) failed"
    echo "round $round ours-native:  $line"
    add native "$line"
    if [ "$QEMU" = 1 ]; then
        line=$("$DRIVER" --backend microvm --runtime qemu --execs "$EXECS") || die "ours (qemu) failed"
        echo "round $round ours-qemu:    $line"
        add qemu "$line"
        rm -rf "$work/qemu-bare"
        line=$(bare_qemu) || die "bare QEMU failed"
        echo "round $round bare-qemu:    $line"
        add bareqemu "$line"
    fi
done

median() { tr ' ' '\n' | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else print v[int((NR + 1) / 2)] }'; }
declare -A MED
for key in "${!ALL[@]}"; do MED[$key]=$(echo "${ALL[$key]}" | median); done

echo
echo "microvm: median of $ROUNDS round(s), $EXECS execs each, milliseconds"
printf '  %-10s %12s %12s %12s %14s\n' figure ours-microvm bare-runsc ours/bare ours-native
for f in launch exec_p50 exec_p99 suspend resume destroy; do
    printf '  %-10s %12s %12s %12s %14s\n' "$f" "${MED[ours.$f]:--}" "${MED[bare.$f]:--}" \
        "$(awk -v a="${MED[ours.$f]:-0}" -v b="${MED[bare.$f]:-0}" 'BEGIN { if (b > 0) printf "%.3fx", a / b; else print "n/a" }')" \
        "${MED[native.$f]:--}"
done
echo
target "launch, ours / bare runsc" "${MED[ours.launch]:-}" "${MED[bare.launch]:-}" "<=" 1.2
target "exec p50, ours / bare runsc" "${MED[ours.exec_p50]:-}" "${MED[bare.exec_p50]:-}" "<=" 1.2
if [ "$QEMU" = 1 ]; then
    echo
    echo "microvm on QEMU (emulated here: no hardware virtualization): median of $ROUNDS round(s), $EXECS execs each, milliseconds"
    printf '  %-10s %12s %12s %12s\n' figure ours-qemu bare-qemu ours/bare
    for f in launch exec_p50 exec_p99 destroy; do
        printf '  %-10s %12s %12s %12s\n' "$f" "${MED[qemu.$f]:--}" "${MED[bareqemu.$f]:--}" \
            "$(awk -v a="${MED[qemu.$f]:-0}" -v b="${MED[bareqemu.$f]:-0}" 'BEGIN { if (b > 0) printf "%.3fx", a / b; else print "n/a" }')"
    done
    echo
    target "launch, ours / bare QEMU" "${MED[qemu.launch]:-}" "${MED[bareqemu.launch]:-}" "<=" 1.5
    target "exec p50, ours / bare QEMU" "${MED[qemu.exec_p50]:-}" "${MED[bareqemu.exec_p50]:-}" "<=" 1.5
fi
finish
