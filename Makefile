# The two commands: `make test` and `make demo`. Both install missing Debian packages first.
BUILD_DIR ?= build
JOBS ?= 2
BUILD_TYPE ?= RelWithDebInfo

DEBIAN_PACKAGES := cmake ninja-build g++ make pkg-config \
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler \
  libabsl-dev libboost-dev librocksdb-dev catch2 libmsgpack-cxx-dev \
  nlohmann-json3-dev libspdlog-dev libcli11-dev libgloo-dev libyaml-cpp-dev libgtest-dev \
  clang libclang-rt-dev \
  libcpp-httplib-dev libssl-dev libxxhash-dev kubectl prometheus chromium python3-kubernetes curl \
  python3-dev pybind11-dev python3-pybind11 python3-cloudpickle python3-msgpack python3-pytest python3-numpy \
  python3-torch python3-venv python3-pip python3-setuptools python3-distributed python3-matplotlib

SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
LAUNCHER := $(shell command -v ccache >/dev/null 2>&1 && echo -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

.PHONY: deps configure build test unit integration demo demo-rl demo-inference bench install clean

deps:
	@missing=$$(for p in $(DEBIAN_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:" $$missing; \
	  $(SUDO) apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "all Debian packages present"; fi

configure: deps
	cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(LAUNCHER)

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

test: build
	cd $(BUILD_DIR) && ctest --output-on-failure

unit: build
	cd $(BUILD_DIR) && ctest --output-on-failure -L unit

integration: build
	cd $(BUILD_DIR) && ctest --output-on-failure -L integration

demo: build
	$(BUILD_DIR)/examples/hello
	$(BUILD_DIR)/examples/pi
	$(BUILD_DIR)/examples/data_parallel_training --epochs=20 --kill-at-epoch=8
	PYTHONPATH=$(BUILD_DIR)/python ORB_BIN_DIR=$(BUILD_DIR)/bin /usr/bin/python3 examples/python/parallel_map.py

# Policy-gradient CartPole on rollout and learner actors, undisturbed and with a rollout
# worker and a learner killed at iteration 20: learning curves, then their plot.
# CLUSTER=fake-k8s runs it on an autoscaled cluster of pods (examples/on_fake_k8s.sh) instead.
ifeq ($(CLUSTER),fake-k8s)
ON_CLUSTER := examples/on_fake_k8s.sh $(BUILD_DIR)
endif
demo-rl: build
	$(ON_CLUSTER) $(BUILD_DIR)/examples/rl_training --iterations=60 --csv $(BUILD_DIR)/rl_clean.csv
	$(ON_CLUSTER) $(BUILD_DIR)/examples/rl_training --iterations=60 --kill-at-iteration=20 --csv $(BUILD_DIR)/rl_killed.csv
	/usr/bin/python3 examples/rl_training/plot.py $(BUILD_DIR)/rl_training.png undisturbed=$(BUILD_DIR)/rl_clean.csv \
	  "killed at iteration 20=$(BUILD_DIR)/rl_killed.csv"
	@echo "plot: $(BUILD_DIR)/rl_training.png"

# Continuous vs static batching on a pool of model servers: figures, then their plot.
demo-inference: build
	$(ON_CLUSTER) $(BUILD_DIR)/examples/inference_demo --loads=20,50,80,110,140 --duration-s=10 --csv $(BUILD_DIR)/inference.csv \
	  $(if $(ON_CLUSTER),--servers=1 --max-servers=3 --scale-pool)
	/usr/bin/python3 examples/inference/plot.py $(BUILD_DIR)/inference.csv $(BUILD_DIR)/inference.png
	@echo "plot: $(BUILD_DIR)/inference.png"

bench: build
	$(BUILD_DIR)/bin/orb_microbenchmark
	$(BUILD_DIR)/bin/orb_actor_benchmark
	$(BUILD_DIR)/bin/orb_object_benchmark
	$(BUILD_DIR)/bin/orb_collective_benchmark
	$(BUILD_DIR)/bin/orb_scheduler_benchmark
	$(BUILD_DIR)/bin/orb_transfer_benchmark
	$(BUILD_DIR)/bin/orb_queue_benchmark
	PYTHONPATH=$(BUILD_DIR)/python ORB_BIN_DIR=$(BUILD_DIR)/bin /usr/bin/python3 -m orb.microbenchmark --no-cpp
	PYTHONPATH=$(BUILD_DIR)/python ORB_BIN_DIR=$(BUILD_DIR)/bin /usr/bin/python3 bench/dask_compare.py

install: build
	cmake --install $(BUILD_DIR)

clean:
	rm -rf $(BUILD_DIR)
