// Command regpush pushes image tarballs (mkimage's docker-archive output) to the local cluster's registry, so the
// nodes' containerd pull them like a user's cluster pulls from its registry:
//
//	regpush [-insecure] [-timeout 2m] TAR=REF [TAR=REF...]
//
// It prints one line per image: REF@sha256:<digest>. Blobs the registry already has are not sent again, so a push of
// unchanged images costs a few HEAD requests. meshbench's own images are pushed by `meshbench images push`; this is
// for the harness' other images (pause, CoreDNS, iperf3, toolbox, PostgreSQL, Istio's images).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func main() {
	insecure := flag.Bool("insecure", false, "the registry speaks plain HTTP")
	timeout := flag.Duration("timeout", 2*time.Minute, "bound on the whole push")
	flag.Parse()
	if flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: regpush [-insecure] TAR=REF [TAR=REF...]")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	for _, a := range flag.Args() {
		out, err := push(ctx, a, *insecure)
		if err != nil {
			fmt.Fprintln(os.Stderr, "regpush:", err)
			os.Exit(1)
		}
		fmt.Println(out)
	}
}

func push(ctx context.Context, arg string, insecure bool) (string, error) {
	tar, ref, ok := strings.Cut(arg, "=")
	if !ok || tar == "" || ref == "" {
		return "", fmt.Errorf("argument %q is not TAR=REF", arg)
	}
	var opts []name.Option
	if insecure {
		opts = append(opts, name.Insecure)
	}
	tag, err := name.NewTag(ref, opts...)
	if err != nil {
		return "", fmt.Errorf("parse %q: %w", ref, err)
	}
	img, err := tarball.ImageFromPath(tar, nil)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", tar, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", fmt.Errorf("digest of %s: %w", tar, err)
	}
	if err := remote.Write(tag, img, remote.WithContext(ctx)); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return "", fmt.Errorf("push %s to %s: timed out: %w", tar, tag, err)
		}
		return "", fmt.Errorf("push %s to %s: %w", tar, tag, err)
	}
	return tag.String() + "@" + d.String(), nil
}
