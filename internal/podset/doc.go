// Package podset describes what one resource reading covers: the pods of one component (PodSet), the test nodes
// measured whole (NodeRef, NodeSet, and the names scrape labels may call a node by), and what a window gave
// (Collected).
//
// It is a leaf so that the parts that decide what to measure (the pod network benchmark, the mesh runner's wiring)
// and the collectors that read them (collectors/prom: Prometheus and the kubelet sampler) share one description
// without importing each other. It imports only results.
package podset
