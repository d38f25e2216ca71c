package workloads

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/meshbench/meshbench/internal/target"
)

// WaitReady waits until the target's workloads are rolled out and every app pod is Ready (target.WaitReady), drawing
// a progress bar on d.Progress. On timeout the error is a *target.NotReadyError naming every pod not ready and why.
func (d *Deployer) WaitReady(ctx context.Context, t target.Target, timeout time.Duration) error {
	if d.Clients == nil {
		return errors.New("wait for workload: no Kubernetes clients")
	}
	c := target.NewCache(d.Clients.Kube, t)
	c.Start(ctx)
	defer c.Stop()
	return d.WaitReadyIn(ctx, c, timeout)
}

// WaitReadyIn is WaitReady on c, a started cache of the target's objects that the caller keeps (and stops) after
// the wait: the mode verification that follows reads the same cache instead of listing every namespace again.
func (d *Deployer) WaitReadyIn(ctx context.Context, c *target.Cache, timeout time.Duration) error {
	t := c.Target()
	start := time.Now()
	var progress func(target.Readiness)
	finish := func() {}
	if d.Progress != nil {
		bar := progressbar.NewOptions(t.ExpectedPods(),
			progressbar.OptionSetWriter(d.Progress),
			progressbar.OptionSetDescription(fmt.Sprintf("%s/%s pods ready", t.App, t.Topology)),
			progressbar.OptionShowCount(),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)
		finish = func() { _ = bar.Finish() }
		progress = func(r target.Readiness) { _ = bar.Set(min(r.ReadyPods, t.ExpectedPods())) }
	}
	r, err := c.WaitReady(ctx, timeout, progress)
	finish()
	if err != nil {
		return err
	}
	d.log().Info("workload ready", "app", t.App, "topology", t.Topology, "pods", r.ReadyPods,
		"elapsed", time.Since(start).Round(time.Millisecond))
	return nil
}
