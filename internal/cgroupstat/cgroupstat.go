package cgroupstat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
)

// Version is the cgroup hierarchy a tree uses.
type Version int

// Versions.
const (
	V1 Version = 1
	V2 Version = 2
)

// Stat is one reading of a cgroup.
type Stat struct {
	CPUNs    uint64 // cumulative CPU time of the cgroup's tasks, nanoseconds
	MemBytes uint64 // memory working set, bytes (see workingSet)
}

// Reader reads one cgroup tree: fsys is rooted at the cgroup mount (os.DirFS("/sys/fs/cgroup") in a container).
type Reader struct {
	fsys    fs.FS
	version Version
	cpuacct string // v1: the directory of the cpuacct hierarchy
}

// v1CPUDirs are where v1 mounts the cpuacct controller: on its own, or co-mounted with cpu (systemd's layout,
// where cpuacct is then a symlink to "cpu,cpuacct").
var v1CPUDirs = []string{"cpuacct", "cpu,cpuacct", "cpuacct,cpu"}

// Open detects the version of the tree: cgroup.controllers exists only at the root of a cgroup2 mount (kernel
// Documentation/admin-guide/cgroup-v2.rst, "Core Interface Files"); a v1 tree (and the hybrid layout, whose
// cgroup2 mount sits at unified/ and holds no controllers in use) has per-controller directories instead.
func Open(fsys fs.FS) (*Reader, error) {
	if _, err := fs.Stat(fsys, "cgroup.controllers"); err == nil {
		return &Reader{fsys: fsys, version: V2}, nil
	}
	for _, d := range v1CPUDirs {
		if _, err := fs.Stat(fsys, d+"/cpuacct.usage"); err == nil {
			return &Reader{fsys: fsys, version: V1, cpuacct: d}, nil
		}
	}
	return nil, errors.New("no cgroup found: neither cgroup.controllers (v2) nor cpuacct/cpuacct.usage (v1) under the cgroup root")
}

// Version is the detected hierarchy.
func (r *Reader) Version() Version { return r.version }

// Read reads the CPU counter and the memory working set.
func (r *Reader) Read() (Stat, error) {
	if r.version == V2 {
		return r.readV2()
	}
	return r.readV1()
}

// readV2: cpu.stat usage_usec (microseconds; kernel cgroup-v2.rst "cpu.stat"), memory.current minus memory.stat
// inactive_file.
func (r *Reader) readV2() (Stat, error) {
	cpu, err := r.keyed("cpu.stat", "usage_usec")
	if err != nil {
		return Stat{}, err
	}
	usage, err := r.single("memory.current")
	if err != nil {
		return Stat{}, err
	}
	inactive, err := r.keyed("memory.stat", "inactive_file")
	if err != nil {
		return Stat{}, err
	}
	return Stat{CPUNs: cpu * 1000, MemBytes: workingSet(usage, inactive)}, nil
}

// readV1: cpuacct.usage (nanoseconds; kernel Documentation/admin-guide/cgroup-v1/cpuacct.rst),
// memory/memory.usage_in_bytes minus memory.stat total_inactive_file (the hierarchical figure, like cAdvisor).
func (r *Reader) readV1() (Stat, error) {
	cpu, err := r.single(r.cpuacct + "/cpuacct.usage")
	if err != nil {
		return Stat{}, err
	}
	usage, err := r.single("memory/memory.usage_in_bytes")
	if err != nil {
		return Stat{}, err
	}
	inactive, err := r.keyed("memory/memory.stat", "total_inactive_file")
	if err != nil {
		return Stat{}, err
	}
	return Stat{CPUNs: cpu, MemBytes: workingSet(usage, inactive)}, nil
}

// workingSet is cAdvisor's container_memory_working_set_bytes (what the kubelet, kubectl top and the Prometheus
// source report): usage minus the inactive file cache, floored at 0 (google/cadvisor
// container/libcontainer/handler.go, setMemoryStats).
func workingSet(usage, inactiveFile uint64) uint64 {
	if usage < inactiveFile {
		return 0
	}
	return usage - inactiveFile
}

// single reads a file holding one unsigned number.
func (r *Reader) single(name string) (uint64, error) {
	b, err := fs.ReadFile(r.fsys, name)
	if err != nil {
		return 0, fmt.Errorf("read cgroup file: %w", err)
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cgroup file %s: %w", name, err)
	}
	return v, nil
}

// keyed reads the value of key in a flat-keyed file ("key value" per line: cpu.stat, memory.stat).
func (r *Reader) keyed(name, key string) (uint64, error) {
	b, err := fs.ReadFile(r.fsys, name)
	if err != nil {
		return 0, fmt.Errorf("read cgroup file: %w", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), " ")
		if !ok || k != key {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("cgroup file %s, key %s: %w", name, key, err)
		}
		return n, nil
	}
	return 0, fmt.Errorf("cgroup file %s has no key %s", name, key)
}
