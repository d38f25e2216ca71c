package scenario

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validatePrometheus checks spec.prometheus: a URL or a Service, and the TLS and token settings only the URL uses.
func validatePrometheus(c *collector, p *field.Path, pr Prometheus) {
	if pr.URL != "" && pr.Service != nil {
		c.add(p, "set either url or service, not both")
	}
	if pr.URL != "" {
		u, err := url.Parse(pr.URL)
		switch {
		case err != nil:
			c.add(p.Child("url"), "must be an http:// or https:// URL such as \"http://127.0.0.1:9090\"") // the text may hold a password: not echoed
		case u.User != nil:
			// run.json echoes the scenario, logs and reports name the URL and schedule stores it in a ConfigMap: a
			// password there is a password in all of them.
			c.add(p.Child("url"), "must not carry credentials (got %q): they would be written to run.json, logs, reports and the scheduled ConfigMap; "+
				"put a token in a file and name it in bearerTokenFile", u.Redacted())
		default:
			if err := CheckHTTPURL(pr.URL, "http://127.0.0.1:9090"); err != nil {
				c.add(p.Child("url"), "%v", err)
			}
		}
	}
	if pr.URL == "" && pr.Service != nil {
		// Through the API server's service proxy the requests carry the kubeconfig's credentials and its CA
		// (collectors/prom NewAPI refuses these fields there, once the run has started).
		for _, f := range []struct {
			name string
			set  bool
		}{{"bearerTokenFile", pr.BearerTokenFile != ""}, {"caFile", pr.CAFile != ""}, {"insecureSkipVerify", pr.InsecureSkipVerify}} {
			if f.set {
				c.add(p.Child(f.name), "applies to prometheus.url only: through prometheus.service the requests go through the API server with the kubeconfig's credentials; remove it, or set url instead of service")
			}
		}
	}
	if svc := pr.Service; svc != nil {
		sp := p.Child("service")
		if msgs := validation.IsDNS1123Label(svc.Namespace); len(msgs) > 0 {
			c.add(sp.Child("namespace"), "must be a namespace name (got %q)", svc.Namespace)
		}
		if msgs := validation.IsDNS1123Label(svc.Name); len(msgs) > 0 {
			c.add(sp.Child("name"), "must be a Service name (got %q)", svc.Name)
		}
		validatePort(c, sp.Child("port"), svc.Port)
		c.oneOf(sp.Child("scheme"), svc.Scheme, []string{"http", "https"})
	}
	if pr.ScrapeInterval.Duration != 0 && pr.ScrapeInterval.Duration < time.Second {
		c.add(p.Child("scrapeInterval"), "must be >= 1s or unset to auto-detect (got %s)", pr.ScrapeInterval)
	}
	if pr.Timeout.Duration <= 0 {
		c.add(p.Child("timeout"), "must be > 0 (got %s)", pr.Timeout)
	}
	if pr.KubeletSampleInterval.Duration < time.Second {
		c.add(p.Child("kubeletSampleInterval"), "must be >= 1s (got %s)", pr.KubeletSampleInterval)
	}
}

// validatePort checks a Service port as the API server's service proxy path takes it: a number from 1 to 65535 or an
// IANA service name (a named port of the Service).
func validatePort(c *collector, p *field.Path, port string) {
	if n, err := strconv.Atoi(port); err == nil {
		if msgs := validation.IsValidPortNum(n); len(msgs) > 0 {
			c.add(p, "is %d; a port number is 1 to 65535 (or give the Service port's name, e.g. \"web\")", n)
		}
		return
	}
	if msgs := validation.IsValidPortName(port); len(msgs) > 0 {
		c.add(p, "must be a port number (1 to 65535) or the name of the Service's port, e.g. \"9090\" or \"web\" (got %q)", port)
	}
}

// CheckHTTPURL checks the URL of an HTTP endpoint meshbench sends requests to: http or https, a host, a port 1-65535.
// The error is the hint without the field's name (example: a URL of the right shape); it never echoes a password
// (an unparsable URL is not shown, others redacted). Whether credentials are allowed is the caller's policy.
func CheckHTTPURL(raw, example string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("must be an http:// or https:// URL such as %q", example)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return fmt.Errorf("must be an http:// or https:// URL such as %q (got %q)", example, u.Redacted())
	}
	if port := u.Port(); port != "" {
		if n, err := strconv.Atoi(port); err != nil || len(validation.IsValidPortNum(n)) > 0 {
			return fmt.Errorf("has port %s; a port is 1 to 65535 (got %q)", port, u.Redacted())
		}
	}
	return nil
}
