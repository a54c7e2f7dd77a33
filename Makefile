# ftbpf build. Everything goes to $(BUILD); vmlinux.h is generated there from the running
# kernel's BTF (/sys/kernel/btf/vmlinux) so the BPF programs match it (CO-RE relocates the rest).
BUILD      ?= build
CC         ?= gcc
CLANG      ?= clang
BPFTOOL    ?= bpftool
ARCH       := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' -e 's/ppc64le/powerpc/' -e 's/s390x/s390/')
VERSION    := 0.1.0

CFLAGS     ?= -O2 -g
CFLAGS     += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-missing-field-initializers \
              -Iinclude -Iuser -I$(BUILD) -DFTBPF_VERSION=\"$(VERSION)\" -fstack-protector-strong \
              $(EXTRA_CFLAGS)
LDLIBS_BPF := -lbpf -lelf -lz
LDLIBS_JSON:= -ljson-c
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Iinclude -I$(BUILD) -Wall -Werror

# The layers (docs/architecture.md): user/lib pure logic, user/os small OS interfaces,
# user/proto wire formats and protocols, user/watch the kernel side's user half (BPF loader,
# probes, sampling, stacks), user/agent ftbpfd, user/client libftbpf and the control client,
# user/cli, user/top and user/ci the tools' own parts; entry points in tools/, benchmarks in bench/.
CORE_SRCS  := $(wildcard user/lib/*.c) $(wildcard user/proto/*.c) \
              user/os/log.c user/os/procfs.c user/os/pidfd.c user/os/safefs.c user/os/conffile.c user/os/statefile.c \
              user/os/ksyms.c user/os/loop.c user/os/nvml.c user/client/ctl_client.c $(wildcard user/cli/*.c) user/top/top_model.c user/top/top_render.c user/top/top_collect.c \
              user/agent/eventlog.c user/agent/ctl.c
WATCH_SRCS := user/watch/tracker.c user/watch/slots.c user/watch/tracker_share.c user/watch/gpuprobe.c user/watch/sample.c user/watch/collect.c user/watch/pystack.c \
              user/watch/pystack_json.c user/watch/inspector.c user/os/elfsym.c user/os/procmem.c user/os/mapfile.c \
              user/os/rasclient.c user/os/sockdiag.c
# ftbpfd's own modules, and the etcd client (libcurl) and the journal (libsystemd) only it links
AGENT_SRCS := $(filter-out user/agent/eventlog.c user/agent/ctl.c,$(wildcard user/agent/*.c)) \
              user/os/etcdv3.c user/os/peeruid.c user/os/journal.c
CORE_OBJS  := $(CORE_SRCS:user/%.c=$(BUILD)/obj/%.o)
WATCH_OBJS := $(WATCH_SRCS:user/%.c=$(BUILD)/obj/%.o)
AGENT_OBJS := $(AGENT_SRCS:user/%.c=$(BUILD)/obj/%.o)
HEADERS    := $(wildcard user/*/*.h) $(wildcard include/ftbpf/*.h)

UNIT_TESTS := $(patsubst tests/unit/%.c,$(BUILD)/tests/%,$(wildcard tests/unit/test_*.c))
# BPF programs tested in-process through the skeleton (root; real kernel)
BPF_TESTS  := $(patsubst tests/bpf/%.c,$(BUILD)/tests/bpf/%,$(wildcard tests/bpf/test_*.c))
WORKLOADS  := $(patsubst tests/workloads/%.c,$(BUILD)/workloads/%,$(filter-out tests/workloads/clockshift.c tests/workloads/fakenvml.c,$(wildcard tests/workloads/*.c))) \
              $(BUILD)/workloads/clockshift.so $(BUILD)/workloads/fakenvml/libnvidia-ml.so.1
FUZZERS    := $(patsubst tests/fuzz/%.c,$(BUILD)/fuzz/%,$(wildcard tests/fuzz/fuzz_*.c))
BINS       := $(BUILD)/ftbpfd $(BUILD)/ftbpf $(BUILD)/bench_syscall $(BUILD)/bench_floor \
              $(BUILD)/libftbpf.so $(BUILD)/libftbpf.a $(BUILD)/bench_timers \
              $(BUILD)/python/ftbpf/__init__.py $(BUILD)/bench_gpuprobe $(BUILD)/ftbpf-ci \
              $(BUILD)/mesh_sim $(BUILD)/ftbpf-top $(BUILD)/ftbpf-mangen $(BUILD)/bench_decide_nodes \
              $(BUILD)/libnccl-profiler-ftbpf.so

DEBIAN_DEPS := build-essential clang llvm clang-format libclang-rt-14-dev libbpf-dev bpftool \
               libelf-dev zlib1g-dev libdw-dev python3-pytest libsodium-dev \
               libjson-c-dev libcunit1-dev libncurses-dev libcurl4-openssl-dev etcd-server etcd-client \
               libmicrohttpd-dev libsystemd-dev python3-prometheus-client \
               tmux jq python3-torch openmpi-bin python3-mpi4py procps util-linux iproute2 help2man \
               libpython3.11-dev python3-pytest-xdist prometheus slurm-wlm nftables

.PHONY: sim sim-test all deps run test build-all integration-plain test-faults attacks unit check-structure integration integration-busy integration-asan asan-agent gpu-bundle fuzz bench format format-check clean install uninstall man
all: $(BINS) $(BUILD)/decide_sim $(UNIT_TESTS) $(BPF_TESTS) $(WORKLOADS) $(BUILD)/examples/c_loop man

deps:
	@scripts/deps.sh $(DEBIAN_DEPS)

$(BUILD) $(BUILD)/tests $(BUILD)/workloads $(BUILD)/fuzz:
	@mkdir -p $@

$(BUILD)/vmlinux.h: | $(BUILD)
	@test -r /sys/kernel/btf/vmlinux || { echo "error: /sys/kernel/btf/vmlinux missing: this kernel has no BTF (CONFIG_DEBUG_INFO_BTF=y is required)"; exit 1; }
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(BUILD)/syscall_names.h: scripts/gen-syscalls.sh | $(BUILD)
	CC=$(CC) scripts/gen-syscalls.sh > $@.tmp && mv $@.tmp $@

$(BUILD)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.bpf.h) include/ftbpf/abi.h include/ftbpf/slot.h $(BUILD)/vmlinux.h
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

$(BUILD)/obj/%.o: user/%.c $(HEADERS) $(BUILD)/syscall_names.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/obj/watch/tracker.o $(BUILD)/obj/watch/slots.o $(BUILD)/obj/watch/tracker_share.o: $(BUILD)/tracker.skel.h

$(BUILD)/libftbpfcore.a: $(CORE_OBJS)
	rm -f $@ && ar rcs $@ $^

# what ftbpfd and ftbpf-ci share to watch processes from the kernel
$(BUILD)/libftbpfwatch.a: $(WATCH_OBJS)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/ftbpfd: tools/ftbpfd.c $(AGENT_OBJS) $(BUILD)/libftbpfwatch.a $(BUILD)/libftbpfcore.a
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS_BPF) $(LDLIBS_JSON) -lcurl -lmicrohttpd -lsystemd -lsodium -lpthread -lm

# ftbpf-ci: the tracker (same BPF programs, loaded privately), user stacks (libdw), Python stacks
CI_SRCS := $(wildcard user/ci/*.c) user/watch/ustack.c
CI_OBJS := $(CI_SRCS:user/%.c=$(BUILD)/obj/%.o)
$(BUILD)/ftbpf-ci: tools/ftbpf_ci.c $(CI_OBJS) $(BUILD)/libftbpfwatch.a $(BUILD)/libftbpfcore.a
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS_BPF) $(LDLIBS_JSON) -ldw -lm

# the decision policy's cost per look over many hosts (pure: the rules and the node tables)
$(BUILD)/bench_decide_nodes: bench/bench_decide_nodes.c bench/bench_util.h $(BUILD)/libftbpfcore.a
	$(CC) $(CFLAGS) $(filter %.c %.a,$^) -o $@ $(LDLIBS_JSON) -lsodium -lm

# the heartbeat mesh's simulator: the protocol code of user/proto/swim.c under virtual time
$(BUILD)/mesh_sim: bench/mesh_sim.c $(BUILD)/libftbpfcore.a
	$(CC) $(CFLAGS) $^ -o $@ -lsodium -lm

# the decision protocol's simulator: the agent's pure look over a model of etcd, many hosts,
# ranks and launchers on one simulated clock (tests/sim, docs/simulator.md)
SIM_SRCS := $(wildcard tests/sim/*.c)
$(BUILD)/decide_sim: $(SIM_SRCS) $(wildcard tests/sim/*.h) $(BUILD)/libftbpfcore.a
	$(CC) $(CFLAGS) -Itests/sim $(SIM_SRCS) $(BUILD)/libftbpfcore.a -o $@ $(LDLIBS_JSON) -lsodium -lm

# the man pages: hand-written sections (man/*.in) merged with parts generated from the key and
# command tables (ftbpf-mangen, a build-time helper) and from ftbpf-ci's and ftbpf-top's --help
$(BUILD)/ftbpf-mangen: tools/ftbpf_mangen.c $(BUILD)/libftbpfcore.a
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS_JSON) -lsodium -lm

MAN_PAGES := $(patsubst man/%.in,$(BUILD)/man/%,$(wildcard man/*.in))
man: $(MAN_PAGES)
$(MAN_PAGES) &: $(wildcard man/*.in) man/gen.sh $(BUILD)/ftbpf-mangen $(BUILD)/ftbpf-ci $(BUILD)/ftbpf-top
	man/gen.sh $(BUILD) $(VERSION)

# ftbpf: the command table, its parser and the text are in the core library (unit-tested)
$(BUILD)/ftbpf: tools/ftbpf.c $(BUILD)/libftbpfcore.a
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS_JSON) -lm

# ftbpf-top: the model and collection are in the core library (unit-tested), curses only here
$(BUILD)/ftbpf-top: tools/ftbpf_top.c $(BUILD)/obj/top/top_draw.o $(BUILD)/libftbpfcore.a
	$(CC) $(CFLAGS) $^ -o $@ $(LDLIBS_JSON) -lncurses -lm

# libftbpf: the client library (no dependency beyond libc and pthreads)
$(BUILD)/obj/client/libftbpf.pic.o: user/client/libftbpf.c include/ftbpf/ftbpf.h include/ftbpf/slot.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fPIC -c $< -o $@

$(BUILD)/libftbpf.so: $(BUILD)/obj/client/libftbpf.pic.o
	$(CC) -shared -Wl,-soname,libftbpf.so.0 $< -o $@ -lpthread

$(BUILD)/libftbpf.a: $(BUILD)/obj/client/libftbpf.pic.o
	rm -f $@ && ar rcs $@ $<

$(BUILD)/workloads/mesh_send: tests/workloads/mesh_send.c $(BUILD)/libftbpfcore.a | $(BUILD)/workloads
	$(CC) $(CFLAGS) $^ -o $@ -lsodium
$(BUILD)/workloads/part_send: tests/workloads/part_send.c $(BUILD)/libftbpfcore.a | $(BUILD)/workloads
	$(CC) $(CFLAGS) $^ -o $@ -lsodium

$(BUILD)/workloads/timer_client: tests/workloads/timer_client.c $(BUILD)/libftbpf.a | $(BUILD)/workloads
	$(CC) $(CFLAGS) $^ -o $@ -lpthread

# Mock libcuda.so.1 and libnccl.so.2 (real names and signatures; behaviour set by the tests)
MOCK := $(BUILD)/mock
MOCK_CFLAGS := $(filter-out -Iuser,$(CFLAGS)) -fPIC
$(MOCK):
	@mkdir -p $@
$(MOCK)/libcuda.so.1: tests/mock/libcuda.c tests/mock/mock_gpu.h | $(MOCK)
	$(CC) $(MOCK_CFLAGS) -shared -Wl,-soname,libcuda.so.1 $< -o $@ -lpthread
	ln -sf libcuda.so.1 $(MOCK)/libcuda.so
$(MOCK)/libnccl.so.2: tests/mock/libnccl.c tests/mock/nccl_ras.c tests/mock/mock_ras.h tests/mock/mock_gpu.h $(MOCK)/libcuda.so.1 user/plugin/ncclprof_abi.h
	$(CC) $(MOCK_CFLAGS) -Iuser -shared -Wl,-soname,libnccl.so.2 tests/mock/libnccl.c tests/mock/nccl_ras.c -o $@ -L$(MOCK) -lcuda -lpthread
	ln -sf libnccl.so.2 $(MOCK)/libnccl.so
MOCK_LINK = -L$(MOCK) -Wl,-rpath,$(abspath $(MOCK)) -lnccl -lcuda
$(BUILD)/workloads/nccl_job: tests/workloads/nccl_job.c $(MOCK)/libnccl.so.2 | $(BUILD)/workloads
	$(CC) $(CFLAGS) $< -o $@ $(MOCK_LINK)
$(BUILD)/workloads/gpu_train: tests/workloads/gpu_train.c $(MOCK)/libnccl.so.2 | $(BUILD)/workloads
	$(CC) $(CFLAGS) $< -o $@ $(MOCK_LINK)
$(BUILD)/bench_gpuprobe: bench/bench_gpuprobe.c $(MOCK)/libnccl.so.2
	$(CC) $(CFLAGS) -Itests/mock $< -o $@ $(MOCK_LINK)

# ftbpf's NCCL profiler plugin: what a device began, for the agent (NCCL_PROFILER_PLUGIN=<it>)
$(BUILD)/libnccl-profiler-ftbpf.so: user/plugin/ncclprof.c user/plugin/ncclprof_abi.h include/ftbpf/abi.h
	$(CC) $(CFLAGS) -fPIC -shared -fvisibility=hidden $< -o $@

# the Python binding, importable with PYTHONPATH=$(BUILD)/python (the library next to it)
$(BUILD)/python/ftbpf/__init__.py: python/ftbpf/__init__.py python/ftbpf/checkpoint.py $(BUILD)/libftbpf.so
	mkdir -p $(dir $@)
	cp $(BUILD)/libftbpf.so $(dir $@)libftbpf.so
	cp python/ftbpf/checkpoint.py $(dir $@)checkpoint.py
	cp $< $@

$(BUILD)/bench_timers: bench/bench_timers.c $(BUILD)/libftbpf.a bench/bench_util.h
	$(CC) $(CFLAGS) $(filter-out %.h,$^) -o $@ -lpthread

$(BUILD)/bench_syscall: bench/bench_syscall.c bench/bench_util.h
	$(CC) $(CFLAGS) $< -o $@

$(BUILD)/bench_floor: bench/bench_floor.c $(BUILD)/floor.skel.h $(BUILD)/libftbpfwatch.a $(BUILD)/libftbpfcore.a
	$(CC) $(CFLAGS) bench/bench_floor.c $(BUILD)/libftbpfwatch.a $(BUILD)/libftbpfcore.a -o $@ $(LDLIBS_BPF) $(LDLIBS_JSON) -lm

# the control server under a randomized multi-client harness: AddressSanitizer and UBSan
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
$(BUILD)/tests/test_ctl_server: tests/unit/test_ctl_server.c $(CORE_SRCS) $(BUILD)/syscall_names.h | $(BUILD)/tests
	$(CC) $(filter-out -fstack-protector-strong,$(CFLAGS)) $(SAN_FLAGS) tests/unit/test_ctl_server.c $(CORE_SRCS) -o $@ -lcunit $(LDLIBS_JSON) -lsodium -lm

# the client library's API, linked as a user's program is
$(BUILD)/tests/test_client_api: tests/unit/test_client_api.c $(BUILD)/libftbpf.a | $(BUILD)/tests
	$(CC) $(CFLAGS) $^ -o $@ -lcunit -lpthread
# the fencing token over a slot in memory: the library compiled in (its handle is private)
$(BUILD)/tests/test_client_fence: tests/unit/test_client_fence.c user/client/libftbpf.c | $(BUILD)/tests
	$(CC) $(CFLAGS) $< -o $@ -lcunit -lpthread

# the cadence parts' rules (an agent module without effects) against the rank table
$(BUILD)/tests/test_cadparts: tests/unit/test_cadparts.c $(BUILD)/libftbpfcore.a | $(BUILD)/tests
	$(CC) $(CFLAGS) $^ -o $@ -lcunit $(LDLIBS_JSON) -lsodium -lm
$(BUILD)/tests/test_testid: tests/unit/test_testid.c user/ci/testid.c | $(BUILD)/tests
	$(CC) $(CFLAGS) $^ -o $@ -lcunit

# the simulator's model of etcd (tests/sim)
$(BUILD)/tests/test_sim_store: tests/unit/test_sim_store.c tests/sim/sim_store.c tests/sim/sim_store.h | $(BUILD)/tests
	$(CC) $(CFLAGS) -Itests/sim $(filter %.c,$^) -o $@ -lcunit
$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libftbpfcore.a | $(BUILD)/tests
	$(CC) $(CFLAGS) $^ -o $@ -lcunit $(LDLIBS_JSON) -lsodium -lm

$(BUILD)/tests/bpf/%: tests/bpf/%.c $(BUILD)/libftbpfwatch.a $(BUILD)/libftbpfcore.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $^ -o $@ -lcunit $(LDLIBS_BPF) $(LDLIBS_JSON) -lm

# the worked examples of docs/examples, built as a user would (the public header, libftbpf)
$(BUILD)/examples/c_loop: docs/examples/c_loop.c $(BUILD)/libftbpf.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(BUILD)/libftbpf.a -o $@ -lpthread

# CPython embedded through the shared libpython3.11 (libpython3.11-dev)
$(BUILD)/workloads/pyembed: tests/workloads/pyembed.c | $(BUILD)/workloads
	$(CC) $(filter-out -Wextra,$(CFLAGS)) $$(/usr/bin/python3.11-config --includes) $< -o $@ $$(/usr/bin/python3.11-config --ldflags --embed)

# the chain of ranks over TCP registers through the client library with --ftbpf
$(BUILD)/workloads/sockchain: tests/workloads/sockchain.c $(BUILD)/libftbpf.a | $(BUILD)/workloads
	$(CC) $(CFLAGS) $< $(BUILD)/libftbpf.a -o $@ -lpthread

$(BUILD)/workloads/%: tests/workloads/%.c | $(BUILD)/workloads
	$(CC) $(CFLAGS) $< -o $@ -lpthread -ldl

# NVML's stand-in where the host has no GPU driver (ftbpf-top's GPU columns: top_tui.sh)
$(BUILD)/workloads/fakenvml/libnvidia-ml.so.1: tests/workloads/fakenvml.c | $(BUILD)/workloads
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -shared -fPIC $< -o $@

# an LD_PRELOAD shim that steps a process's wall clock (decide_faults.sh)
$(BUILD)/workloads/clockshift.so: tests/workloads/clockshift.c | $(BUILD)/workloads
	$(CC) $(CFLAGS) -shared -fPIC $< -o $@ -ldl

comma := ,
FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -std=c11 -D_GNU_SOURCE -Iinclude -Iuser -I$(BUILD) \
               -DFTBPF_VERSION=\"$(VERSION)\"
# the code under test is compiled once, instrumented, and linked into every fuzz target
FUZZ_OBJ_CFLAGS := $(subst -fsanitize=fuzzer$(comma),-fsanitize=fuzzer-no-link$(comma),$(FUZZ_CFLAGS))
fuzzobj = $(patsubst user/%.c,$(BUILD)/fuzz/obj/%.o,$(1))
$(BUILD)/fuzz/obj/%.o: user/%.c $(HEADERS) $(BUILD)/syscall_names.h
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_OBJ_CFLAGS) -c $< -o $@
PYSTACK_SRCS := user/watch/pystack.c user/os/elfsym.c user/os/procmem.c user/os/mapfile.c user/os/pidfd.c \
                user/os/procfs.c user/lib/maps.c user/lib/pyver.c user/lib/elfcheck.c
$(BUILD)/fuzz/fuzz_pyline: tests/fuzz/fuzz_pyline.c $(call fuzzobj,$(PYSTACK_SRCS)) | $(BUILD)/fuzz
	$(CLANG) $(FUZZ_CFLAGS) $^ -o $@ -lelf
$(BUILD)/fuzz/fuzz_elfsym: tests/fuzz/fuzz_elfsym.c $(call fuzzobj,user/os/elfsym.c user/lib/elfcheck.c) | $(BUILD)/fuzz
	$(CLANG) $(FUZZ_CFLAGS) $^ -o $@ -lelf
$(BUILD)/fuzz/%: tests/fuzz/%.c $(call fuzzobj,$(CORE_SRCS)) | $(BUILD)/fuzz
	$(CLANG) $(FUZZ_CFLAGS) $^ -o $@ $(LDLIBS_JSON) -lsodium -lm

# what running needs: the agent, the tools, the library and its binding, the man pages (not the
# tests or benches), built on every core unless the caller chose -j
RUN_BINS := $(BUILD)/ftbpfd $(BUILD)/ftbpf $(BUILD)/ftbpf-top $(BUILD)/ftbpf-ci $(BUILD)/libftbpf.so \
            $(BUILD)/libftbpf.a $(BUILD)/python/ftbpf/__init__.py
RUN_JOBS := $(if $(filter -j% --jobserver%,$(MAKEFLAGS)),,-j$(shell nproc))

# the agent in the foreground; first, what to type next (the tools are in $(BUILD)/)
run: deps
	@$(MAKE) --no-print-directory $(RUN_JOBS) $(RUN_BINS) man
	@echo "ftbpfd starts in the foreground with the defaults$(if $(RUN_ARGS), and $(RUN_ARGS)) (Ctrl-C stops it)."
	@echo "In another terminal (other users: after sudo make install):"
	@echo "  export PATH=$(abspath $(BUILD)):\$$PATH    # the tools; or: sudo make install"
	@echo "  ftbpf status          # jobs and ranks on this host; a hung job and its culprit"
	@echo "  ftbpf events --follow # adoptions, exits and who killed them, hangs, actions"
	@echo "  ftbpf-top             # the live view"
	@echo "  man -l $(BUILD)/man/ftbpf.1   # and ftbpfd.8, ftbpfd.conf.5, ftbpf-top.1, ftbpf-ci.1"
	./$(BUILD)/ftbpfd $(RUN_ARGS)

# the Python binding's pure parts (stdlib unittest, no agent): tests/unit/test_*.py
PY_UNIT_TESTS := $(wildcard tests/unit/test_*.py)
unit: $(UNIT_TESTS)
	@tests/run-unit.sh $(UNIT_TESTS) $(PY_UNIT_TESTS)

bpf-test: $(BPF_TESTS)
	@tests/run-unit.sh $(BPF_TESTS)

FUZZ_SECONDS ?= 10
fuzz: $(FUZZERS)
	@tests/run-fuzz.sh $(FUZZ_SECONDS) $(FUZZERS)

integration: all
	@tests/integration/run.sh
# The decision simulator (docs/simulator.md): make sim runs SIM_RUNS seeds of every fault kind
# (SIM_BIG_RUNS of the 65- and 1,000-host kinds); sim-test is make test's stage, fewer seeds,
# every kind but the 1,000 hosts (minutes a run)
SIM_RUNS ?= 10000
SIM_BIG_RUNS ?= 3
SIM_TEST_RUNS ?= 150
SIM_TEST_KINDS := preempt rank_fail host_death agent_pause agent_restart_cut etcd_outage host_cut \
                  clock_skew preempt_grace node_fault_limit two_preemptions hosts65
sim: $(BUILD)/decide_sim
	@tests/sim/run.sh $(BUILD)/decide_sim $(SIM_RUNS) $(SIM_BIG_RUNS)
sim-test: $(BUILD)/decide_sim
	@tests/sim/run.sh $(BUILD)/decide_sim $(SIM_TEST_RUNS) 2 $(SIM_TEST_KINDS)

# issue 31's attacks alone (they are part of make integration and, but for two, of the ASan pass)
attacks: all
	@tests/run-attacks.sh

# The agent built with AddressSanitizer and UBSan (its own build folder), run through the
# adversarial tests and a few others: memory errors, leaks and undefined behaviour fail them.
ASAN_BUILD := build-asan
# (the adversarial tests and the junk etcd server: what parses or holds what others send; the
# rest runs in the plain build only, for make test's time)
ASAN_TESTS := sec_ctl_bad_input sec_ctl sec_files sec_stale_pid sec_setuid_owner sec_etcd_trust \
              sec_metrics_cli sec_tables sec_mapped_fifo sec_many_mappings sec_truncate_race \
              sec_probe_table decide_bad_store sec_exited_ranks sec_thread_execs sec_sparse_elf \
              sec_probe_poison sec_rescan_environ
asan-agent:
	$(MAKE) $(RUN_JOBS) BUILD=$(ASAN_BUILD) EXTRA_CFLAGS="$(SAN_FLAGS)" $(ASAN_BUILD)/ftbpfd
# The detection and timer tests again, on a busy host (a CPU hog per core, a fork loop); more with
# make integration-busy BUSY_TESTS="..." (make test runs these, for its time)
BUSY_TESTS := detect_sleeping_culprit detect_spinning_culprit detect_stopped_culprit detect_hard_timeout \
              detect_soft_signal timers_fifo timers_slot gpu_driver detect_wrappers gpu_pace_healthy \
              detect_mpi_spin
integration-busy: all
	@BUSY=1 tests/integration/run.sh $(BUSY_TESTS)

integration-asan: all asan-agent
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1 \
		FTBPFD=$(abspath $(ASAN_BUILD)/ftbpfd) tests/integration/run.sh $(ASAN_TESTS)

# Every integration test runs once in make test: the ones in BUSY_TESTS on the busy host only, the
# ones in ASAN_TESTS against the ASan/UBSan agent only, the rest here (make integration runs them
# all, plainly). Each stage is timed and a failed one does not stop the later ones.
# what make test builds: the agent, the tools, the tests and the fuzz targets
build-all: all $(FUZZERS)

# (but for those whose plain run checks more: detect_mpi_spin's straggler part is skipped on the
# busy host, and sec_exited_ranks and sec_rescan_environ bound the agent's RSS and answer time in
# the plain build only: they run in both)
BOTH_TESTS := detect_mpi_spin sec_exited_ranks sec_rescan_environ
integration-plain: all
	@tests/integration/run.sh --except "$(filter-out $(BOTH_TESTS),$(BUSY_TESTS) $(ASAN_TESTS))"

test: deps
	@tests/run-stages.sh "$(MAKE) --no-print-directory" -j$(shell nproc)+build-all \
		format-check check-structure unit sim-test bpf-test fuzz integration-plain integration-busy integration-asan

# ftbpfd, ftbpf, the shared libraries they need and tests/gpu, for a GPU host without a
# compiler or libbpf (tests/gpu/run.sh says how to run it there)
gpu-bundle: all
	rm -rf $(BUILD)/gpu-bundle && mkdir -p $(BUILD)/gpu-bundle/bin/lib $(BUILD)/gpu-bundle/tests/gpu
	cp $(BUILD)/ftbpfd $(BUILD)/ftbpf $(BUILD)/ftbpf-top $(BUILD)/libnccl-profiler-ftbpf.so $(BUILD)/gpu-bundle/bin/
	cp $$(command -v jq) $(BUILD)/gpu-bundle/bin/ # GPU images often lack it; the test needs it
	ldd $(BUILD)/ftbpfd $(BUILD)/ftbpf $(BUILD)/ftbpf-top $$(command -v jq) | awk '/=> \// {print $$3}' | sort -u | \
		grep -vE '/(libc|libm|libpthread|libdl|librt|ld-linux[^/]*)\.so' | \
		xargs -r -I{} cp -L {} $(BUILD)/gpu-bundle/bin/lib/
	cp tests/gpu/run.sh tests/gpu/gpu_work.py $(BUILD)/gpu-bundle/tests/gpu/
	tar -C $(BUILD) -czf $(BUILD)/gpu-bundle.tar.gz gpu-bundle
	@echo "$(BUILD)/gpu-bundle.tar.gz: unpack on the GPU host, run sudo gpu-bundle/tests/gpu/run.sh gpu-bundle/bin"

bench: all
	@bench/bench.sh

# the fault-injection suite's long mode: 50 randomized runs per fault kind, the kinds shared out
# over FAULT_SLOTS copies side by side (about 40 minutes with 3 on 2 cores; tests/run-faults.sh)
FAULT_RUNS ?= 50
FAULT_SLOTS ?= 3
test-faults: all
	@FAULT_RUNS=$(FAULT_RUNS) FAULT_SLOTS=$(FAULT_SLOTS) FAULT_REPORT=$(abspath $(BUILD))/faults.txt tests/run-faults.sh

FORMAT_FILES := $(wildcard bpf/*.c bpf/*.h include/ftbpf/*.h user/*/*.c user/*/*.h tools/*.c tools/*.h bench/*.c bench/*.h tests/unit/*.c tests/bpf/*.c tests/fuzz/*.c tests/workloads/*.c docs/examples/*.c)
format:
	clang-format -i $(FORMAT_FILES)
format-check:
	@clang-format --dry-run --Werror $(FORMAT_FILES) && echo "format-check: ok"

# no include cycle, layers as docs/architecture.md's table says, no I/O in its pure layers, no
# link out of the repository in it, no C/H/BPF file over 1,000 lines; the checker's own
# self-test (a made-up tree per rule) first
check-structure:
	@timeout 120 /usr/bin/python3 tests/structure/test_check_structure.py >/dev/null || \
		{ /usr/bin/python3 tests/structure/test_check_structure.py; exit 1; }
	@timeout 120 /usr/bin/python3 tools/check_structure.py

# make install [PREFIX=/usr/local] [DESTDIR=...]: binaries, the client library (ldconfig when
# installing into /), headers, the Python binding where this system's python3 looks
# (site-packages of PREFIX), the man pages made by `make man`, bash completion, the docs,
# contrib/ (alert rules, dashboard, manifests) under share/ftbpf, the unit and an example config.
PREFIX  ?= /usr/local
PYSITE  := $(shell /usr/bin/python3 -c 'import site, sys; p = sys.argv[1]; print(next((d for d in site.getsitepackages() if d.startswith(p + "/lib/")), p + "/lib/python3/dist-packages"))' $(PREFIX) 2>/dev/null)
DOCDIR  := $(PREFIX)/share/doc/ftbpf
DATADIR := $(PREFIX)/share/ftbpf
MANDIR  := $(PREFIX)/share/man
COMPDIR := $(PREFIX)/share/bash-completion/completions
MAN_INSTALLED = $(foreach m,$(notdir $(MAN_PAGES)),$(MANDIR)/man$(subst .,,$(suffix $(m)))/$(m))
INSTALLED_FILES = $(PREFIX)/sbin/ftbpfd $(PREFIX)/bin/ftbpf $(PREFIX)/bin/ftbpf-ci $(PREFIX)/bin/ftbpf-top \
	$(PREFIX)/lib/libftbpf.so.0 $(PREFIX)/lib/libftbpf.so $(PREFIX)/lib/libftbpf.a \
	$(PREFIX)/lib/libnccl-profiler-ftbpf.so $(PREFIX)/include/ftbpf/ftbpf.h $(PREFIX)/include/ftbpf/slot.h $(PYSITE)/ftbpf/__init__.py $(PYSITE)/ftbpf/checkpoint.py \
	$(MAN_INSTALLED) $(COMPDIR)/ftbpf /etc/systemd/system/ftbpfd.service
install: all
	@test -n "$(PYSITE)" || { echo "install: cannot tell python3's site-packages"; exit 1; }
	install -D -m 0755 $(BUILD)/ftbpfd $(DESTDIR)$(PREFIX)/sbin/ftbpfd
	install -D -m 0755 $(BUILD)/ftbpf $(DESTDIR)$(PREFIX)/bin/ftbpf
	install -D -m 0755 $(BUILD)/ftbpf-ci $(DESTDIR)$(PREFIX)/bin/ftbpf-ci
	install -D -m 0755 $(BUILD)/ftbpf-top $(DESTDIR)$(PREFIX)/bin/ftbpf-top
	install -D -m 0644 $(BUILD)/libftbpf.so $(DESTDIR)$(PREFIX)/lib/libftbpf.so.0
	ln -sf libftbpf.so.0 $(DESTDIR)$(PREFIX)/lib/libftbpf.so
	install -D -m 0644 $(BUILD)/libftbpf.a $(DESTDIR)$(PREFIX)/lib/libftbpf.a
	install -D -m 0644 $(BUILD)/libnccl-profiler-ftbpf.so $(DESTDIR)$(PREFIX)/lib/libnccl-profiler-ftbpf.so
	install -D -m 0644 include/ftbpf/ftbpf.h $(DESTDIR)$(PREFIX)/include/ftbpf/ftbpf.h
	install -D -m 0644 include/ftbpf/slot.h $(DESTDIR)$(PREFIX)/include/ftbpf/slot.h
	install -D -m 0644 python/ftbpf/__init__.py $(DESTDIR)$(PYSITE)/ftbpf/__init__.py
	install -D -m 0644 python/ftbpf/checkpoint.py $(DESTDIR)$(PYSITE)/ftbpf/checkpoint.py
	for m in $(notdir $(MAN_PAGES)); do \
		s=$${m##*.}; sed 's|/usr/local/|$(PREFIX)/|g' $(BUILD)/man/$$m > $(BUILD)/man/$$m.inst && \
		install -D -m 0644 $(BUILD)/man/$$m.inst $(DESTDIR)$(MANDIR)/man$$s/$$m && rm -f $(BUILD)/man/$$m.inst || exit 1; \
	done
	install -D -m 0644 contrib/ftbpf.bash-completion $(DESTDIR)$(COMPDIR)/ftbpf
	mkdir -p $(DESTDIR)$(DOCDIR)/examples
	install -m 0644 README.md docs/*.md $(DESTDIR)$(DOCDIR)/
	install -m 0644 docs/examples/* $(DESTDIR)$(DOCDIR)/examples/
	rm -rf $(DESTDIR)$(DATADIR)/contrib && mkdir -p $(DESTDIR)$(DATADIR)
	cp -R contrib $(DESTDIR)$(DATADIR)/contrib && chmod -R u=rwX,go=rX $(DESTDIR)$(DATADIR)/contrib
	sed 's|/usr/local|$(PREFIX)|g' contrib/ftbpfd.service > $(BUILD)/ftbpfd.service
	install -D -m 0644 $(BUILD)/ftbpfd.service $(DESTDIR)/etc/systemd/system/ftbpfd.service
	test -e $(DESTDIR)/etc/ftbpf/ftbpfd.conf || install -D -m 0644 contrib/ftbpfd.conf $(DESTDIR)/etc/ftbpf/ftbpfd.conf
	if [ -z "$(DESTDIR)" ]; then ldconfig; fi

# make uninstall: what install put there (the config file, state and logs stay)
uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED_FILES))
	rm -rf $(DESTDIR)$(DOCDIR) $(DESTDIR)$(DATADIR)
	-rmdir $(DESTDIR)$(PREFIX)/include/ftbpf $(DESTDIR)$(PYSITE)/ftbpf/__pycache__ $(DESTDIR)$(PYSITE)/ftbpf 2>/dev/null
	if [ -z "$(DESTDIR)" ]; then ldconfig; fi

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
.SECONDARY:
