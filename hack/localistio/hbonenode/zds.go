package hbonenode

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	"istio.io/istio/pkg/sleep"
	"istio.io/istio/pkg/zdsapi"
)

// PodInfo is what the istio-cni agent says about a pod it hands over.
type PodInfo struct {
	UID            string
	Name           string
	Namespace      string
	ServiceAccount string
}

// pods is what the ZDS side drives: the node proxy's set of enrolled pods.
type pods interface {
	// AddPod takes ownership of netnsFd (the pod's network namespace) and starts serving the pod.
	AddPod(info PodInfo, netnsFd int) error
	DelPod(uid string)
	// KeepOnly drops every pod not in uids (after the agent's snapshot on a new connection).
	KeepOnly(uids map[string]bool)
}

// ZDS speaks ztunnel's side of the istio-cni node agent's protocol (istio.io/istio/pkg/zdsapi over a unixpacket
// socket): ZdsHello V1, then one Ack per WorkloadRequest. Add carries the pod's netns fd as SCM_RIGHTS.
type ZDS struct {
	// Socket is the agent's socket; empty: DefaultZDSSocket(Node), re-resolved on every reconnect.
	Socket    string
	Node      string
	Pods      pods
	Log       *slog.Logger
	Metrics   *Metrics
	connected atomic.Bool
}

// Connected reports whether the agent connection is up.
func (z *ZDS) Connected() bool { return z.connected.Load() }

// DefaultZDSSocket is /var/run/ztunnel/<node>/ztunnel.sock when that directory exists (the local cluster runs one
// istio-cni agent per node as a host process, all sharing one host directory), else ztunnel's own path.
func DefaultZDSSocket(node string) string {
	if node != "" {
		if st, err := os.Stat(filepath.Join("/var/run/ztunnel", node)); err == nil && st.IsDir() {
			return filepath.Join("/var/run/ztunnel", node, "ztunnel.sock")
		}
	}
	return "/var/run/ztunnel/ztunnel.sock"
}

// Run keeps a connection to the agent until ctx ends, reconnecting every second.
func (z *ZDS) Run(ctx context.Context) {
	for ctx.Err() == nil {
		sock := z.Socket
		if sock == "" {
			sock = DefaultZDSSocket(z.Node)
		}
		if err := z.runOnce(ctx, sock); err != nil && ctx.Err() == nil {
			z.Log.Warn("istio-cni agent connection ended; retrying in 1s", "socket", sock, "err", err)
		}
		z.setConnected(false)
		sleep.UntilContext(ctx, time.Second)
	}
}

func (z *ZDS) setConnected(up bool) {
	z.connected.Store(up)
	if z.Metrics != nil {
		v := 0.0
		if up {
			v = 1
		}
		z.Metrics.zds.Set(v)
	}
}

func (z *ZDS) runOnce(ctx context.Context, sock string) error {
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: sock, Net: "unixpacket"})
	if err != nil {
		return err
	}
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	hello, err := proto.Marshal(&zdsapi.ZdsHello{Version: zdsapi.Version_V1})
	if err != nil {
		return err
	}
	z.setConnected(true) // before the hello: the agent answers it with the snapshot
	if _, _, err := c.WriteMsgUnix(hello, nil, nil); err != nil {
		return fmt.Errorf("hello: %w", err)
	}
	z.Log.Info("connected to the istio-cni agent, sent hello", "socket", sock)
	seen := map[string]bool{} // uids in the agent's snapshot: after SnapshotSent, every other pod is dropped
	buf := make([]byte, 65536)
	oob := make([]byte, unix.CmsgSpace(4*8))
	for {
		n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
		if err != nil {
			return err
		}
		fds := rights(oob[:oobn])
		var req zdsapi.WorkloadRequest
		if err := proto.Unmarshal(buf[:n], &req); err != nil {
			closeAll(fds)
			return fmt.Errorf("workload request: %w", err)
		}
		ackErr := ""
		switch p := req.Payload.(type) {
		case *zdsapi.WorkloadRequest_Add:
			info := PodInfo{UID: p.Add.GetUid(), Name: p.Add.GetWorkloadInfo().GetName(),
				Namespace: p.Add.GetWorkloadInfo().GetNamespace(), ServiceAccount: p.Add.GetWorkloadInfo().GetServiceAccount()}
			seen[info.UID] = true
			z.Log.Info("ADD", "uid", info.UID, "pod", info.Namespace+"/"+info.Name, "sa", info.ServiceAccount)
			if len(fds) == 0 {
				ackErr = "ADD without a netns fd"
				break
			}
			if err := z.Pods.AddPod(info, fds[0]); err != nil {
				z.Log.Warn("ADD failed", "uid", info.UID, "err", err)
				ackErr = err.Error()
			}
			fds = fds[1:]
		case *zdsapi.WorkloadRequest_Keep:
			z.Log.Info("KEEP", "uid", p.Keep.GetUid())
			seen[p.Keep.GetUid()] = true
		case *zdsapi.WorkloadRequest_Del:
			z.Log.Info("DEL", "uid", p.Del.GetUid())
			z.Pods.DelPod(p.Del.GetUid())
		case *zdsapi.WorkloadRequest_SnapshotSent:
			z.Log.Info("SNAPSHOT_SENT", "pods", len(seen))
			z.Pods.KeepOnly(seen)
		}
		closeAll(fds)
		ack, err := proto.Marshal(&zdsapi.WorkloadResponse{Payload: &zdsapi.WorkloadResponse_Ack{Ack: &zdsapi.Ack{Error: ackErr}}})
		if err != nil {
			return err
		}
		if _, _, err := c.WriteMsgUnix(ack, nil, nil); err != nil {
			return fmt.Errorf("ack: %w", err)
		}
	}
}

func rights(oob []byte) []int {
	var fds []int
	msgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return nil
	}
	for _, m := range msgs {
		if f, err := unix.ParseUnixRights(&m); err == nil {
			fds = append(fds, f...)
		}
	}
	return fds
}

func closeAll(fds []int) {
	for _, fd := range fds {
		unix.Close(fd)
	}
}
