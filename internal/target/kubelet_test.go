package target

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// TestFailedNodes: the nodes of every node error in a tree (wrapped, joined), once each, in order; the text of a
// KubeletError is its cause's.
func TestFailedNodes(t *testing.T) {
	t.Parallel()
	exec := errors.New(`client lg-a (node node2): exec "meshbench-agent load": dial tcp 10.0.0.2:10250: connect: connection refused`)
	ke := &KubeletError{Node: "node2", Err: exec}
	if ke.Error() != exec.Error() || !errors.Is(ke, exec) {
		t.Errorf("KubeletError text %q, want its cause's", ke.Error())
	}
	notReady := &NodeNotReadyError{Readiness: Readiness{Nodes: []string{"node3: Ready=Unknown for 1m10s (x: y)", "node2: Ready=False for 40s (a: b)"}}}
	for _, tc := range []struct {
		name string
		err  error
		want []string
	}{
		{"none", nil, nil},
		{"other", errors.New("pod web-1: ImagePullBackOff"), nil},
		{"kubelet, wrapped", fmt.Errorf("load: %w", ke), []string{"node2"}},
		{"joined clients", errors.Join(errors.New("client lg-b: report is for target \"x\""), ke,
			&KubeletError{Node: "node1", Err: errors.New("stream closed")}, ke), []string{"node2", "node1"}},
		{"not ready and kubelet", fmt.Errorf("switch: %w", errors.Join(notReady, ke)), []string{"node3", "node2"}},
		{"no node known", &KubeletError{Err: exec}, nil},
	} {
		if got := FailedNodes(tc.err); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
