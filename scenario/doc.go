// Package scenario is meshbench's configuration (meshbench.dev/v1alpha1): a strict loader, defaults, Validate (every
// problem at once, each with its field path and a hint) and Plan (ordered cases with stable IDs). It is pure (no I/O
// but reading the file in Load, no cluster access) and imports no other meshbench package.
package scenario
