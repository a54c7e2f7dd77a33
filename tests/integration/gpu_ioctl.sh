#!/bin/bash
# GPU-driver activity (issue #4, first part): ioctls on character devices whose major is a GPU
# driver's are counted per thread, from the kernel. No GPU here: a test-configured major (1,
# the mem devices: /dev/null is 1:3) stands in for one; ioctls on a pipe must not count.
. "$(dirname "$0")/lib.sh"
start_agent --soft-timeout 60 --hard-timeout 600 --action report --gpu-majors 1 || exit 1
jq_status '.agent.features.gpu_majors | index(1) != null' && pass "configured major in use" || fail "majors: $(status_json | jq -c .agent.features.gpu_majors)"
IOC='import fcntl, os, sys, termios, time
fd = os.open("/dev/null", os.O_RDONLY) if sys.argv[1] == "gpu" else os.pipe()[0]
for _ in range(100):
    try:
        fcntl.ioctl(fd, termios.FIONREAD, b"0000")
    except OSError:
        pass
print("done", flush=True)
time.sleep(20)'
FTBPF_JOB=gpujob FTBPF_RANK=0 /usr/bin/python3 -c "$IOC" gpu </etc/hostname >"$T/g.out" 2>&1 & G=$!; WORKLOAD_PIDS+=($G)
FTBPF_JOB=gpujob FTBPF_RANK=1 /usr/bin/python3 -c "$IOC" pipe </etc/hostname >"$T/p.out" 2>&1 & P=$!; WORKLOAD_PIDS+=($P)
wait_until 20 bash -c "grep -q done '$T/g.out' && grep -q done '$T/p.out'" || fail "workloads did not run"
wait_until 5 jq_status ".ranks[] | select(.pid==$G) | .gpu_ioctls >= 100 and .gpu_last_s_ago >= 0" &&
	pass "ioctls on the 'GPU' device counted: $(status_json | jq ".ranks[] | select(.pid==$G) | .gpu_ioctls")" ||
	fail "gpu rank: $(status_json | jq -c ".ranks[] | select(.pid==$G)")"
jq_status ".ranks[] | select(.pid==$P) | .gpu_ioctls == 0" && pass "ioctls on a pipe are not GPU activity" || fail "pipe counted"
finish
