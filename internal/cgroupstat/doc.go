// Package cgroupstat reads the calling container's own cgroup (v1 and v2: CPU counter, memory working set) at the
// root of the tree it is given, and summarises a window of 1 s samples: the source of `meshbench cni` that needs no
// Prometheus. It is a leaf; why the mount root is the container's cgroup: docs/cni.md.
package cgroupstat
