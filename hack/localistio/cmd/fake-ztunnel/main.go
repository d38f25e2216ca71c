// Command fake-ztunnel is a TEST DOUBLE for ztunnel (Rust, not buildable here); it is never shipped. It runs as
// the image docker.io/istio/ztunnel:<tag>-distroless (OCI label meshbench.dev/test-standin=true) inside Istio's
// own rendered ztunnel DaemonSet. It speaks ztunnel's side of the
// ZDS protocol (istio.io/istio/pkg/zdsapi) to the REAL istio-cni node agent: connects to its
// unixpacket socket, sends ZdsHello{V1}, and ACKs every WorkloadRequest. With it the node agent
// completes AddPodToMesh and annotates pods ambient.istio.io/redirection=enabled.
//
// With -passthrough (default true) it also keeps enrolled pods' traffic flowing: for each Add it
// uses the passed pod-netns fd to listen on 15001 (outbound) and 15006 (inbound) INSIDE the pod
// netns (like ztunnel's in-pod mode) and forwards each redirected connection, plaintext, to its
// SO_ORIGINAL_DST, dialled from the pod netns with SO_MARK 0x539 so the redirect rules skip it.
// No mTLS, no HBONE, no waypoint routing, no L4 policy, no DNS proxy (run istio-cni with AMBIENT_DNS_CAPTURE=false).
//
// Socket: -sock, else /var/run/ztunnel/$NODE_NAME/ztunnel.sock when that directory exists (the local cluster runs
// one istio-cni agent per node as a host process, all sharing one host directory), else /var/run/ztunnel/ztunnel.sock.
// It serves :15021/healthz/ready (200 while connected to the agent) and :15020/metrics, like ztunnel's ports.
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"

	"istio.io/istio/pkg/zdsapi"
)

// version is set by hack/localistio/build.sh (-X main.version=...).
var version = "dev"

var (
	connected atomic.Bool
	adds      atomic.Int64
	forwarded atomic.Int64 // redirected connections forwarded to their original destination
)

var passthrough = flag.Bool("passthrough", true, "listen on 15001/15006 in each pod netns and forward traffic to its original destination")

type pod struct {
	fd  int
	lns []net.Listener
}

var (
	mu   sync.Mutex
	pods = map[string]*pod{}
)

func main() {
	sock := flag.String("sock", "", "istio-cni ZDS socket (default: see the package comment; re-resolved on every reconnect)")
	health := flag.String("health", ":15021", "readiness listener (empty: none)")
	metrics := flag.String("metrics", ":15020", "metrics listener (empty: none)")
	flag.Parse() // stops at the first non-flag: ztunnel's own args ("proxy ztunnel") are ignored
	log.Printf("fake-ztunnel %s (test stand-in) node=%q", version, os.Getenv("NODE_NAME"))
	serveHTTP(*health, *metrics)
	for {
		s := *sock
		if s == "" {
			s = defaultSock()
		}
		if err := run(s); err != nil {
			log.Printf("conn: %v; retrying in 1s", err)
		}
		connected.Store(false)
		time.Sleep(time.Second)
	}
}

func defaultSock() string {
	if n := os.Getenv("NODE_NAME"); n != "" {
		if st, err := os.Stat(filepath.Join("/var/run/ztunnel", n)); err == nil && st.IsDir() {
			return filepath.Join("/var/run/ztunnel", n, "ztunnel.sock")
		}
	}
	return "/var/run/ztunnel/ztunnel.sock"
}

func serveHTTP(health, metrics string) {
	if health != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/healthz/ready", func(w http.ResponseWriter, _ *http.Request) {
			if !connected.Load() {
				http.Error(w, "not connected to the istio-cni agent", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, "ready")
		})
		go func() { log.Printf("health: %v", http.ListenAndServe(health, mux)) }()
	}
	if metrics != "" {
		mux := http.NewServeMux()
		mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
			mu.Lock()
			n := len(pods)
			mu.Unlock()
			up := 0
			if connected.Load() {
				up = 1
			}
			fmt.Fprintf(w, "# TYPE fake_ztunnel_info gauge\nfake_ztunnel_info{version=%q,standin=\"true\"} 1\n", version)
			fmt.Fprintf(w, "# TYPE fake_ztunnel_zds_connected gauge\nfake_ztunnel_zds_connected %d\n", up)
			fmt.Fprintf(w, "# TYPE fake_ztunnel_workloads gauge\nfake_ztunnel_workloads %d\n", n)
			fmt.Fprintf(w, "# TYPE fake_ztunnel_adds_total counter\nfake_ztunnel_adds_total %d\n", adds.Load())
			fmt.Fprintf(w, "# TYPE fake_ztunnel_forwarded_connections_total counter\nfake_ztunnel_forwarded_connections_total %d\n", forwarded.Load())
		})
		go func() { log.Printf("metrics: %v", http.ListenAndServe(metrics, mux)) }()
	}
}

func run(sock string) error {
	c, err := net.DialUnix("unixpacket", nil, &net.UnixAddr{Name: sock, Net: "unixpacket"})
	if err != nil {
		return err
	}
	defer c.Close()
	hello, _ := proto.Marshal(&zdsapi.ZdsHello{Version: zdsapi.Version_V1})
	if _, _, err := c.WriteMsgUnix(hello, nil, nil); err != nil {
		return err
	}
	log.Printf("connected to %s, sent hello", sock)
	connected.Store(true)
	seen := map[string]bool{} // uids in the agent's snapshot: after SnapshotSent, forget every other pod
	buf := make([]byte, 65536)
	oob := make([]byte, unix.CmsgSpace(4*8))
	for {
		n, oobn, _, _, err := c.ReadMsgUnix(buf, oob)
		if err != nil {
			return err
		}
		var fds []int
		if oobn > 0 {
			if msgs, err := syscall.ParseSocketControlMessage(oob[:oobn]); err == nil {
				for _, m := range msgs {
					if f, err := syscall.ParseUnixRights(&m); err == nil {
						fds = append(fds, f...)
					}
				}
			}
		}
		var req zdsapi.WorkloadRequest
		if err := proto.Unmarshal(buf[:n], &req); err != nil {
			return err
		}
		ackErr := ""
		switch p := req.Payload.(type) {
		case *zdsapi.WorkloadRequest_Add:
			adds.Add(1)
			seen[p.Add.Uid] = true
			log.Printf("ADD uid=%s %s/%s fds=%v", p.Add.Uid, p.Add.GetWorkloadInfo().GetNamespace(), p.Add.GetWorkloadInfo().GetName(), fds)
			if len(fds) > 0 {
				if err := addPod(p.Add.Uid, fds[0]); err != nil {
					log.Printf("  add failed: %v", err)
					ackErr = err.Error()
				}
				fds = fds[1:]
			}
		case *zdsapi.WorkloadRequest_Keep:
			log.Printf("KEEP uid=%s", p.Keep.Uid)
		case *zdsapi.WorkloadRequest_Del:
			log.Printf("DEL uid=%s", p.Del.Uid)
			delPod(p.Del.Uid)
		case *zdsapi.WorkloadRequest_SnapshotSent:
			log.Printf("SNAPSHOT_SENT")
			forgetExcept(seen)
		}
		for _, fd := range fds {
			syscall.Close(fd)
		}
		ack, _ := proto.Marshal(&zdsapi.WorkloadResponse{Payload: &zdsapi.WorkloadResponse_Ack{Ack: &zdsapi.Ack{Error: ackErr}}})
		if _, _, err := c.WriteMsgUnix(ack, nil, nil); err != nil {
			return err
		}
	}
}

// inNetns runs f on an OS thread switched into the netns fd (sockets created by f stay in that netns).
func inNetns(fd int, f func() error) error {
	runtime.LockOSThread()
	orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return err
	}
	defer unix.Close(orig)
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("setns: %w", err)
	}
	ferr := f()
	if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("restore netns: %w", err) // leave the thread locked: it dies with the goroutine
	}
	runtime.UnlockOSThread()
	return ferr
}

func addPod(uid string, fd int) error {
	mu.Lock()
	defer mu.Unlock()
	if _, ok := pods[uid]; ok {
		syscall.Close(fd)
		return nil
	}
	p := &pod{fd: fd}
	if *passthrough {
		err := inNetns(fd, func() error {
			for _, port := range []int{15001, 15006} {
				ln, err := net.Listen("tcp4", fmt.Sprintf(":%d", port))
				if err != nil {
					return err
				}
				p.lns = append(p.lns, ln)
			}
			return nil
		})
		if err != nil {
			for _, ln := range p.lns {
				ln.Close()
			}
			syscall.Close(fd)
			return err
		}
		for _, ln := range p.lns {
			go serve(p, ln)
		}
	}
	pods[uid] = p
	return nil
}

func forgetExcept(keep map[string]bool) {
	mu.Lock()
	var gone []string
	for uid := range pods {
		if !keep[uid] {
			gone = append(gone, uid)
		}
	}
	mu.Unlock()
	for _, uid := range gone {
		log.Printf("forget uid=%s (not in snapshot)", uid)
		delPod(uid)
	}
}

func delPod(uid string) {
	mu.Lock()
	defer mu.Unlock()
	if p, ok := pods[uid]; ok {
		for _, ln := range p.lns {
			ln.Close()
		}
		syscall.Close(p.fd)
		delete(pods, uid)
	}
}

func origDst(c net.Conn) (netip.AddrPort, error) {
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return netip.AddrPort{}, err
	}
	var ap netip.AddrPort
	var serr error
	rc.Control(func(fd uintptr) {
		m, err := syscall.GetsockoptIPv6Mreq(int(fd), syscall.SOL_IP, 80 /* SO_ORIGINAL_DST */)
		if err != nil {
			serr = err
			return
		}
		port := binary.BigEndian.Uint16(m.Multiaddr[2:4])
		ap = netip.AddrPortFrom(netip.AddrFrom4([4]byte(m.Multiaddr[4:8])), port)
	})
	return ap, serr
}

func serve(p *pod, ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			dst, err := origDst(c)
			if err != nil {
				log.Printf("origdst: %v", err)
				return
			}
			var up net.Conn
			err = inNetns(p.fd, func() error {
				d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
					var e error
					rc.Control(func(fd uintptr) { e = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MARK, 0x539) })
					return e
				}}
				var derr error
				up, derr = d.Dial("tcp4", dst.String())
				return derr
			})
			if err != nil {
				log.Printf("%s -> %s: dial: %v", ln.Addr(), dst, err)
				return
			}
			defer up.Close()
			forwarded.Add(1)
			done := make(chan struct{}, 2)
			go func() { io.Copy(up, c); up.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
			go func() { io.Copy(c, up); c.(*net.TCPConn).CloseWrite(); done <- struct{}{} }()
			<-done
			<-done
		}()
	}
}
