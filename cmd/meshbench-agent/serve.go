package main

import (
	"context"
	"errors"
	"flag"
	"strings"

	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/fnet"
	"fortio.org/log"
)

// runServe starts fortio's echo servers. With --forward the HTTP port instead forwards each request to every
// downstream URL (fortio's MultiServer), which is how a fortio-chain service passes load to the next hop.
func runServe(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	httpPort := fs.String("http-port", "8080", "HTTP echo port (fortio echo: ?delay=, ?size=, ?status= supported)")
	tcpPort := fs.String("tcp-port", "8078", "TCP echo port (request/response tests); empty disables")
	udpPort := fs.String("udp-port", "8078", "UDP echo port; empty disables")
	forward := fs.String("forward", "", "comma-separated downstream URLs; when set the HTTP port forwards to each")
	serial := fs.Bool("serial", false, "with --forward: call downstreams one after another instead of in parallel")
	logLevel := fs.String("log-level", "warning", "fortio log level")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log.SetLogLevelStr(*logLevel)
	if *forward != "" {
		cfg := &fhttp.MultiServerConfig{Serial: *serial, Name: "meshbench-chain"}
		for _, d := range strings.Split(*forward, ",") {
			if d = strings.TrimSpace(d); d != "" {
				cfg.Targets = append(cfg.Targets, fhttp.TargetConf{Destination: d, MirrorOrigin: true})
			}
		}
		if mux, _ := fhttp.MultiServer(*httpPort, cfg); mux == nil {
			return errors.New("start forwarding server on port " + *httpPort)
		}
	} else if mux, _ := fhttp.Serve(*httpPort, "/debug"); mux == nil {
		return errors.New("start HTTP echo server on port " + *httpPort)
	}
	if *tcpPort != "" && fnet.TCPEchoServer("tcp-echo", *tcpPort) == nil {
		return errors.New("start TCP echo server on port " + *tcpPort)
	}
	if *udpPort != "" && fnet.UDPEchoServer("udp-echo", *udpPort, false) == nil {
		return errors.New("start UDP echo server on port " + *udpPort)
	}
	<-ctx.Done()
	return nil
}
