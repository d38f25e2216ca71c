// Package images builds and publishes the two container images meshbench runs from its own source, the way ko and
// crane users expect, with go-containerregistry and no Docker:
//
//	<registry>/meshbench-agent:<tag>   /usr/local/bin/meshbench-agent (entrypoint): fortio servers, load clients, RR/CRR
//	<registry>/meshbench:<tag>         /usr/local/bin/meshbench (entrypoint): the CLI, for the CronJob of `meshbench schedule`
//
// Each is an OCI image index over linux/amd64 and linux/arm64 (or the platforms asked for). Every platform image has
// two layers: a base shared by all images and platforms (a minimal /etc/passwd and /etc/group naming user nonroot
// 65532, /etc/nsswitch.conf, /home/nonroot, /tmp with mode 1777, and the build host's CA bundle at
// /etc/ssl/certs/ca-certificates.crt when it has one, because the CLI talks TLS to Prometheus and Pushgateways), and
// the binary, cross-compiled with CGO_ENABLED=0 -trimpath and the Makefile's -ldflags stamping of internal/version
// (Version, Commit, BuildDate). The config runs as 65532:65532 and carries the OCI labels
// org.opencontainers.image.{title,description,version,revision,source,created}, which the index repeats as
// annotations.
//
// # Reproducible
//
// Layer entries have a fixed mtime (the Unix epoch) and owner root, layers are gzip at a fixed level, and "created"
// is SOURCE_DATE_EPOCH, else the commit time of the source tree, else the CLI's build date: building the same tree
// twice gives the same digests, and the base layer's digest stays the same across versions (registries and nodes
// keep one copy).
//
// # The tag is the tool version
//
// Tag turns meshbench's version ("v0.1.0", "df4d013-dirty", "dev") into a valid tag. The cmd layer passes the same
// tag to scenario.LoadWith, which makes it the default of spec.images.tag, so the agent a run deploys is the one built
// from the same version as the CLI that deploys it.
//
// # Where they go
//
// Push writes both indexes to a registry (credentials from the Docker config keychain, plain HTTP only when asked).
// writeArchive writes one OCI image layout tarball holding both, with index.json entries annotated
// io.containerd.image.name=<full reference> and org.opencontainers.image.ref.name=<tag>, which containerd's importer
// (`ctr -n k8s.io images import`, and so `kind load image-archive`) turns into image records.
//
// # Progress
//
// Build and Push write a line to Options.Progress (PushOptions.Progress) when each binary starts and ends compiling
// and each image starts and ends pushing, and one every defaultHeartbeat (a minute) while a step runs, with the time
// so far and, for a push, the bytes the registry has: a cold compile of the CLI takes minutes on two cores, and the
// first `make demo` must never look hung.
//
// # Preflight
//
// Check resolves the images a run will pull with a manifest HEAD, concurrently and bounded: OK (digest, platforms of
// an index), FAIL when the registry answers "not found" or "unauthorized", WARN when it cannot be reached from here
// (the nodes may still reach it). The cmd layer converts the results into preflight checks, so mesh does not depend
// on registries.
package images
