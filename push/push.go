package push

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	pgpush "github.com/prometheus/client_golang/prometheus/push"
	"github.com/prometheus/common/expfmt"

	"github.com/meshbench/meshbench/export"
	"github.com/meshbench/meshbench/report"
)

// Options says where to push.
type Options struct {
	URL      string          // Pushgateway base URL, e.g. http://pushgateway.monitoring:9091
	Job      string          // grouping key job; "" = "meshbench"
	Instance string          // grouping key instance; "" = the scenario name, else "default"
	Timeout  time.Duration   // per push; 0 = 30s
	Client   pgpush.HTTPDoer // nil = http.Client with Timeout (and Insecure)
	// Insecure turns off TLS verification of the Pushgateway (report --push-insecure). Verification is on unless
	// this is set; the CLI prints a warning when it is.
	Insecure bool
}

// RedactURL is u with a password in its user info replaced by "xxxxx" (url.URL.Redacted), for messages: a
// Pushgateway URL may carry basic-auth credentials and errors and logs must not. Text that does not parse is
// replaced as a whole.
func RedactURL(u string) string {
	pu, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return pu.Redacted()
}

// splitCredentials parses u and removes its user info, which pgpush would otherwise put into its error messages
// (prometheus/client_golang prometheus/push/push.go, v1.25.0: "unexpected status code %d while pushing to %s" with
// the full URL); the credentials go to pgpush's BasicAuth instead.
func splitCredentials(u string) (bare string, user *url.Userinfo, err error) {
	pu, err := url.Parse(u)
	if err != nil {
		return "", nil, errors.New("push: the Pushgateway URL does not parse") // not echoed: it may hold a password
	}
	if pu.Scheme != "http" && pu.Scheme != "https" || pu.Host == "" {
		return "", nil, fmt.Errorf("push: Pushgateway URL %q: want http:// or https://host[:port]", pu.Redacted())
	}
	user, pu.User = pu.User, nil
	return pu.String(), user, nil
}

// Push replaces the metrics of the grouping key {job, instance} on the Pushgateway with the report's (HTTP PUT), in
// the text exposition format.
func Push(ctx context.Context, r report.Report, opts Options) error {
	if opts.URL == "" {
		return errors.New("push: no Pushgateway URL")
	}
	job := orText(opts.Job, "meshbench")
	instance := opts.Instance
	if instance == "" {
		instance = orText(r.ScenarioName(), "default")
	}
	reg := export.Registry(r)
	timeout := opts.Timeout
	if timeout == 0 {
		timeout = 30 * time.Second
	}
	bare, user, err := splitCredentials(opts.URL)
	if err != nil {
		return err
	}
	client := opts.Client
	if client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		if opts.Insecure {
			tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12} //nolint:gosec // --push-insecure: asked for, and warned about
		}
		client = &http.Client{Timeout: timeout, Transport: tr}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	p := pgpush.New(bare, job).Grouping("instance", instance).Gatherer(reg).Client(client).
		Format(expfmt.NewFormat(expfmt.TypeTextPlain))
	if user != nil {
		pw, _ := user.Password()
		p = p.BasicAuth(user.Username(), pw)
	}
	if err := p.PushContext(ctx); err != nil {
		return fmt.Errorf("push to %s (job %q, instance %q): %w", bare, job, instance, err)
	}
	return nil
}

func orText(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}
