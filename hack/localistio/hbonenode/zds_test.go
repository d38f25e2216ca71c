package hbonenode

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	"istio.io/istio/pkg/zdsapi"
)

// recordingPods records what the ZDS side asks of the node proxy.
type recordingPods struct {
	mu     sync.Mutex
	added  []PodInfo
	fds    []int
	del    []string
	keep   []map[string]bool
	failOn string
}

func (r *recordingPods) AddPod(info PodInfo, fd int) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.added = append(r.added, info)
	r.fds = append(r.fds, fd)
	unix.Close(fd)
	if info.UID == r.failOn {
		return errors.New("listen failed")
	}
	return nil
}

func (r *recordingPods) DelPod(uid string) { r.mu.Lock(); r.del = append(r.del, uid); r.mu.Unlock() }

func (r *recordingPods) KeepOnly(uids map[string]bool) {
	r.mu.Lock()
	r.keep = append(r.keep, maps.Clone(uids))
	r.mu.Unlock()
}

// TestZDSProtocol plays the istio-cni agent's side (cni/pkg/nodeagent/ztunnelserver.go at the pin): hello first,
// then a snapshot of Add (with the netns fd) and Keep, SnapshotSent, a Del; every request gets one Ack.
func TestZDSProtocol(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "ztunnel.sock")
	ln, err := net.ListenUnix("unixpacket", &net.UnixAddr{Name: sock, Net: "unixpacket"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pods := &recordingPods{failOn: "uid-broken"}
	z := &ZDS{Socket: sock, Pods: pods, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: NewMetrics("test")}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go z.Run(ctx)

	_ = ln.SetDeadline(time.Now().Add(10 * time.Second))
	c, err := ln.AcceptUnix()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 1024)
	n, _, _, _, err := c.ReadMsgUnix(buf, nil)
	if err != nil {
		t.Fatal(err)
	}
	var hello zdsapi.ZdsHello
	if err := proto.Unmarshal(buf[:n], &hello); err != nil || hello.GetVersion() != zdsapi.Version_V1 {
		t.Fatalf("hello = %v, %v", &hello, err)
	}
	if !z.Connected() {
		t.Error("not Connected after the hello")
	}
	devNull, err := os.Open(os.DevNull) // stands in for a pod's netns fd
	if err != nil {
		t.Fatal(err)
	}
	defer devNull.Close()
	send := func(req *zdsapi.WorkloadRequest, fd *os.File) string {
		t.Helper()
		b, err := proto.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		var oob []byte
		if fd != nil {
			oob = unix.UnixRights(int(fd.Fd()))
		}
		if _, _, err := c.WriteMsgUnix(b, oob, nil); err != nil {
			t.Fatal(err)
		}
		n, _, _, _, err := c.ReadMsgUnix(buf, nil)
		if err != nil {
			t.Fatal(err)
		}
		var resp zdsapi.WorkloadResponse
		if err := proto.Unmarshal(buf[:n], &resp); err != nil || resp.GetAck() == nil {
			t.Fatalf("response = %v, %v; want an Ack", &resp, err)
		}
		return resp.GetAck().GetError()
	}
	add := func(uid string) *zdsapi.WorkloadRequest {
		return &zdsapi.WorkloadRequest{Payload: &zdsapi.WorkloadRequest_Add{Add: &zdsapi.AddWorkload{Uid: uid,
			WorkloadInfo: &zdsapi.WorkloadInfo{Name: "pod-" + uid, Namespace: "app", ServiceAccount: "sa"}}}}
	}
	if e := send(add("uid-1"), devNull); e != "" {
		t.Errorf("Add acked with error %q", e)
	}
	if e := send(add("uid-broken"), devNull); e != "listen failed" {
		t.Errorf("failed Add acked with %q, want the error", e)
	}
	if e := send(add("uid-nofd"), nil); e == "" {
		t.Error("Add without a netns fd acked without error")
	}
	if e := send(&zdsapi.WorkloadRequest{Payload: &zdsapi.WorkloadRequest_Keep{Keep: &zdsapi.KeepWorkload{Uid: "uid-kept"}}}, nil); e != "" {
		t.Errorf("Keep acked with %q", e)
	}
	if e := send(&zdsapi.WorkloadRequest{Payload: &zdsapi.WorkloadRequest_SnapshotSent{SnapshotSent: &zdsapi.SnapshotSent{}}}, nil); e != "" {
		t.Errorf("SnapshotSent acked with %q", e)
	}
	if e := send(&zdsapi.WorkloadRequest{Payload: &zdsapi.WorkloadRequest_Del{Del: &zdsapi.DelWorkload{Uid: "uid-1"}}}, nil); e != "" {
		t.Errorf("Del acked with %q", e)
	}

	pods.mu.Lock()
	defer pods.mu.Unlock()
	if len(pods.added) != 2 || pods.added[0] != (PodInfo{UID: "uid-1", Name: "pod-uid-1", Namespace: "app", ServiceAccount: "sa"}) {
		t.Errorf("added = %+v", pods.added)
	}
	if len(pods.keep) != 1 || !slices.Equal(slices.Sorted(maps.Keys(pods.keep[0])), []string{"uid-1", "uid-broken", "uid-kept", "uid-nofd"}) {
		t.Errorf("KeepOnly got %v: want the snapshot's Add and Keep uids", pods.keep)
	}
	if !slices.Equal(pods.del, []string{"uid-1"}) {
		t.Errorf("deleted = %v", pods.del)
	}
	for _, fd := range pods.fds {
		if fd == int(devNull.Fd()) {
			t.Error("the node got the agent's own fd number, not a received copy")
		}
	}
}
