// Package podset describes what one resource reading covers: a component's pods (PodSet), the test nodes measured
// whole (NodeRef, NodeSet) and what a window gave (Collected). A leaf (it imports only results), so what decides what
// to measure and the collectors that read it share one description without importing each other.
package podset
