package hbonenode

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	cniconfig "istio.io/istio/cni/pkg/config"
)

// inNetns runs f on an OS thread switched into the network namespace fd: sockets f creates stay in that netns.
// The thread goes back to its own netns afterwards; if that fails it stays locked and dies with the goroutine.
func inNetns(fd int, f func() error) error {
	runtime.LockOSThread()
	orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open own netns: %w", err)
	}
	defer unix.Close(orig)
	if err := unix.Setns(fd, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("setns: %w", err)
	}
	ferr := f()
	if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("restore netns: %w", err)
	}
	runtime.UnlockOSThread()
	return ferr
}

// listenIn opens a TCP listener on 0.0.0.0:port inside netns fd.
func listenIn(fd int, port int) (net.Listener, error) {
	var ln net.Listener
	err := inNetns(fd, func() error {
		var err error
		ln, err = net.Listen("tcp4", ":"+strconv.Itoa(port))
		return err
	})
	return ln, err
}

// NetnsDialer dials from inside a pod's network namespace with the in-pod mark (cni/pkg/config InpodMark 0x539),
// which the pin's in-pod rules exempt from redirection (cni/pkg/nftables: "mark & 0xfff != 0x539" on both the
// 15001 and the 15006 redirect): the way the node proxy delivers to the pod's app, and sends plaintext out.
type NetnsDialer struct {
	Fd      int
	Timeout time.Duration
}

// DialContext connects to addr from the pod's netns.
func (d NetnsDialer) DialContext(ctx context.Context, addr netip.AddrPort) (net.Conn, error) {
	nd := net.Dialer{Timeout: d.Timeout, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		if err := rc.Control(func(fd uintptr) {
			serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_MARK, cniconfig.InpodMark)
		}); err != nil {
			return err
		}
		return serr
	}}
	// The socket is created during DialContext, so the dial runs on the switched thread; the connect itself is
	// bounded by ctx and Timeout.
	var c net.Conn
	err := inNetns(d.Fd, func() error {
		var err error
		c, err = nd.DialContext(ctx, "tcp", addr.String())
		return err
	})
	return c, err
}

// origDst is the destination a REDIRECTed connection had before NAT (getsockopt SOL_IP SO_ORIGINAL_DST, a
// sockaddr_in read through the IPv6Mreq layout as ztunnel and Envoy do).
func origDst(c net.Conn) (netip.AddrPort, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return netip.AddrPort{}, errors.New("not a TCP connection")
	}
	rc, err := tc.SyscallConn()
	if err != nil {
		return netip.AddrPort{}, err
	}
	var ap netip.AddrPort
	var serr error
	if err := rc.Control(func(fd uintptr) {
		m, err := unix.GetsockoptIPv6Mreq(int(fd), unix.SOL_IP, unix.SO_ORIGINAL_DST)
		if err != nil {
			serr = fmt.Errorf("SO_ORIGINAL_DST: %w", err)
			return
		}
		port := binary.BigEndian.Uint16(m.Multiaddr[2:4])
		ap = netip.AddrPortFrom(netip.AddrFrom4([4]byte(m.Multiaddr[4:8])), port)
	}); err != nil {
		return netip.AddrPort{}, err
	}
	return ap, serr
}
