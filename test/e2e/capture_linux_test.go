//go:build e2e

package e2e

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// tcpCapture watches one interface read-only (an AF_PACKET socket: nothing is sent) and counts the TCP payload
// bytes to or from each watched port; for new connections to tlsPort (their SYN seen) it keeps the first payload
// bytes, and it counts payloads on tlsPort that carry plaintext HTTP.
type tcpCapture struct {
	fd      int
	tlsPort uint16
	stop    chan struct{}
	done    chan struct{}

	mu        sync.Mutex
	bytes     map[uint16]int64
	newFlows  map[netip.AddrPort][]byte // client end of a new tlsPort connection → its first payload (nil until one)
	plainHTTP int
}

// startCapture captures on the interface that holds addr (the local cluster's inter-node link: the host end of
// veth mbnode2 holds node1's IP, hack/localcluster/README.md), until stop.
func startCapture(t *testing.T, addr netip.Addr, tlsPort uint16, ports ...uint16) *tcpCapture {
	t.Helper()
	ifi, err := interfaceWith(addr)
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		t.Fatalf("packet capture on %s needs root (CAP_NET_RAW): %v", ifi.Name, err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL), Ifindex: ifi.Index}); err != nil {
		unix.Close(fd)
		t.Fatalf("bind the capture to %s: %v", ifi.Name, err)
	}
	tv := unix.NsecToTimeval((200 * time.Millisecond).Nanoseconds())
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	c := &tcpCapture{fd: fd, tlsPort: tlsPort, stop: make(chan struct{}), done: make(chan struct{}),
		bytes: map[uint16]int64{}, newFlows: map[netip.AddrPort][]byte{}}
	for _, p := range append(ports, tlsPort) {
		c.bytes[p] = 0
	}
	go c.loop()
	t.Cleanup(c.Stop)
	t.Logf("capturing TCP on %s (read-only)", ifi.Name)
	return c
}

func interfaceWith(addr netip.Addr) (*net.Interface, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return nil, err
	}
	for _, ifi := range ifs {
		addrs, _ := ifi.Addrs()
		for _, a := range addrs {
			if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr() == addr {
				return &ifi, nil
			}
		}
	}
	return nil, fmt.Errorf("no interface holds %s", addr)
}

// Stop ends the capture (idempotent).
func (c *tcpCapture) Stop() {
	select {
	case <-c.stop:
	default:
		close(c.stop)
		<-c.done
		unix.Close(c.fd)
	}
}

func (c *tcpCapture) loop() {
	defer close(c.done)
	buf := make([]byte, 1<<16)
	for {
		select {
		case <-c.stop:
			return
		default:
		}
		n, _, err := unix.Recvfrom(c.fd, buf, 0)
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return
		}
		c.packet(buf[:n])
	}
}

// packet parses Ethernet + IPv4 + TCP and accounts the payload.
func (c *tcpCapture) packet(b []byte) {
	if len(b) < 14+20 || binary.BigEndian.Uint16(b[12:14]) != unix.ETH_P_IP {
		return
	}
	ip := b[14:]
	ihl, total := int(ip[0]&0x0f)*4, int(binary.BigEndian.Uint16(ip[2:4]))
	if ip[9] != unix.IPPROTO_TCP || ihl < 20 || len(ip) < ihl+20 {
		return
	}
	tcp := ip[ihl:]
	sport, dport := binary.BigEndian.Uint16(tcp[0:2]), binary.BigEndian.Uint16(tcp[2:4])
	doff, flags := int(tcp[12]>>4)*4, tcp[13]
	src := netip.AddrPortFrom(netip.AddrFrom4([4]byte(ip[12:16])), sport)
	c.mu.Lock()
	defer c.mu.Unlock()
	if dport == c.tlsPort && flags&0x12 == 0x02 { // SYN without ACK: a new connection
		c.newFlows[src] = nil
	}
	size := total - ihl - doff
	if size <= 0 {
		return
	}
	for _, p := range []uint16{sport, dport} {
		if _, ok := c.bytes[p]; ok {
			c.bytes[p] += int64(size)
		}
	}
	payload := tcp[min(doff, len(tcp)):min(total-ihl, len(tcp))]
	if sport == c.tlsPort || dport == c.tlsPort {
		if bytes.Contains(payload, []byte("HTTP/1.1")) {
			c.plainHTTP++
		}
	}
	if first, ok := c.newFlows[src]; ok && dport == c.tlsPort && first == nil && len(payload) > 0 {
		c.newFlows[src] = append([]byte(nil), payload[:min(len(payload), 8)]...)
	}
}

// result is what the capture saw: payload bytes per port, first payloads of new tlsPort connections, and the
// number of tlsPort payloads with plaintext HTTP.
func (c *tcpCapture) result() (map[uint16]int64, map[netip.AddrPort][]byte, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := map[uint16]int64{}
	for k, v := range c.bytes {
		b[k] = v
	}
	f := map[netip.AddrPort][]byte{}
	for k, v := range c.newFlows {
		f[k] = v
	}
	return b, f, c.plainHTTP
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
