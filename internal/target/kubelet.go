package target

import (
	"errors"
	"slices"
)

// KubeletError is an operation through node Node's kubelet (exec, logs, proxy) that failed on its way, not the
// command's answer: the runner learns from it which node to check before the next case, since the node stays Ready
// for its grace (docs/reliability.md). Its text is Err's.
type KubeletError struct {
	Node string
	Err  error
}

func (e *KubeletError) Error() string { return e.Err.Error() }

func (e *KubeletError) Unwrap() error { return e.Err }

// FailedNodes names the nodes err blames, in order and once each: those of every *NodeNotReadyError (pods on a node
// not Ready past nodeGrace) and every *KubeletError (a call through a node's kubelet failed) in err's tree, through
// %w wrapping and errors.Join (errors.As would find only the first). Nil when err blames no node.
func FailedNodes(err error) []string {
	var out []string
	add := func(n string) {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	// Every error of the tree is visited; errors.As on one finds that error itself first when it is of the type
	// (deeper matches are visited and added again: add keeps each node once).
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		var nn *NodeNotReadyError
		if errors.As(err, &nn) {
			for _, n := range nn.NodeNames() {
				add(n)
			}
		}
		var ke *KubeletError
		if errors.As(err, &ke) {
			add(ke.Node)
		}
		if u := errors.Unwrap(err); u != nil {
			walk(u)
			return
		}
		var joined interface{ Unwrap() []error }
		if errors.As(err, &joined) { // err itself: it has no single Unwrap
			for _, e := range joined.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return out
}
