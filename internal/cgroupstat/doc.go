// Package cgroupstat reads the calling container's own cgroup (CPU usage counter and memory working set) and
// summarises a window of 1 s samples: the resource source of `meshbench cni` that needs no Prometheus, so cases
// shorter than the collector's rate range still get CPU figures.
//
// A container sees its own cgroup at the mount root: under cgroup v2 with a private cgroup namespace (the
// containerd and CRI-O default on v2) /sys/fs/cgroup is a fresh cgroup2 mount whose root is the namespace's root,
// the container's cgroup; under v1 runc mounts a tmpfs at /sys/fs/cgroup and bind-mounts each hierarchy's container
// cgroup directory onto /sys/fs/cgroup/<subsystem> (opencontainers/runc libcontainer/rootfs_linux.go,
// mountCgroupV1 with getCgroupMounts' binds). So Open reads the root of the tree it is given; it does not walk
// /proc/self/cgroup.
//
// It is a leaf (no project imports). meshbench-agent's `cgroups` subcommand writes the samples; cni
// reads them back through `cgroups dump` and Summarize.
package cgroupstat
