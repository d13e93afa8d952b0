# bench.mk - `make bench`: benchmarks against peers, run in the same session.
# Called by the top Makefile as: make -f bench/bench.mk BUILD=... bench
# Results go to bench/results/*.md (the README quotes them).

BUILD ?= build
B     := $(BUILD)/bench
CXXFLAGS_B := -O2 -std=c++17 -DNDEBUG
CFLAGS_B := -std=c17 -O2 -D_GNU_SOURCE -Icore -Idrivers -Irt
# LDLIBS: libprox's libraries, passed by the top Makefile (its LDLIBS)

.PHONY: bench bench-distance bench-ist bench-voxel bench-rt bench-boxes
bench: bench-distance bench-ist bench-voxel bench-rt bench-boxes
	@echo "bench: results in bench/results/"

$(B)/gen_poses: bench/gen_poses.c core/cli/geom.c $(BUILD)/libprox.a
	@mkdir -p $(B)
	$(CC) $(CFLAGS_B) $^ -o $@ $(LDLIBS)

$(B)/gen_convex: bench/gen_convex.c core/cli/geom.c $(BUILD)/libprox.a
	@mkdir -p $(B)
	$(CC) $(CFLAGS_B) $^ -o $@ $(LDLIBS)

$(B)/fcl_distance: bench/fcl_distance.cpp
	@mkdir -p $(B)
	$(CXX) $(CXXFLAGS_B) -I/usr/include/eigen3 $< -o $@ -lfcl -lccd -lassimp

$(B)/cgal_volume: bench/cgal_volume.cpp
	@mkdir -p $(B)
	$(CXX) $(CXXFLAGS_B) $< -o $@ -lgmp -lmpfr

$(B)/voxel_bench: bench/voxel_bench.c $(BUILD)/libprox.a
	@mkdir -p $(B)
	$(CC) $(CFLAGS_B) $^ -o $@ $(LDLIBS)

$(B)/subdivide: bench/subdivide.c $(BUILD)/libprox.a
	@mkdir -p $(B)
	$(CC) $(CFLAGS_B) $^ -o $@ $(LDLIBS)

$(B)/gen_plates: bench/gen_plates.c $(BUILD)/libprox.a
	@mkdir -p $(B)
	$(CC) $(CFLAGS_B) $^ -o $@ $(LDLIBS)

$(B)/stall_probe: bench/stall_probe.c
	@mkdir -p $(B)
	$(CC) $(CFLAGS_B) $< -o $@

$(B)/load_gen: bench/load_gen.c
	@mkdir -p $(B)
	$(CC) $(CFLAGS_B) $< -o $@ -llo -lm

bench-distance: $(B)/gen_poses $(B)/fcl_distance $(B)/gen_plates
	BUILD=$(BUILD) sh bench/run_distance.sh

bench-ist: $(B)/gen_poses $(B)/cgal_volume $(B)/stall_probe $(B)/subdivide
	BUILD=$(BUILD) sh bench/run_ist.sh

bench-voxel: $(B)/voxel_bench
	$(B)/voxel_bench data/meshes/armadillo.off bench/results/voxel.md

bench-boxes: $(B)/gen_convex $(B)/fcl_distance $(BUILD)/prox
	BUILD=$(BUILD) sh bench/run_boxes.sh

bench-rt: $(B)/load_gen
	BUILD=$(BUILD) sh bench/run_rt.sh
