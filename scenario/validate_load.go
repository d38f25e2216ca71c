package scenario

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validateLoad checks spec.load's levels, connections and timing; window is windows.load, which load.duration must hold.
func validateLoad(c *collector, p *field.Path, l *LoadSpec, window time.Duration) {
	if len(l.QPS) == 0 {
		c.add(p.Child("qps"), "must list at least one level, a number > 0 or \"max\"")
	}
	seen := map[string]bool{}
	for i, q := range l.QPS {
		if !q.Max && !(q.Value > 0) {
			c.add(p.Child("qps").Index(i), "must be > 0 or \"max\" (got %s)", q)
			continue
		}
		if !q.Max && (q.Value < minQPSLevel || q.Value > maxQPSLevel) {
			c.add(p.Child("qps").Index(i), "must be between %s and %s requests per second, or \"max\" (got %g): below, a load window holds "+
				"too few requests to measure; above, no load generator drives it (\"max\" measures the highest rate the clients reach)",
				strconv.FormatFloat(minQPSLevel, 'f', -1, 64), strconv.FormatFloat(maxQPSLevel, 'f', -1, 64), q.Value)
			continue
		}
		if seen[q.String()] {
			c.add(p.Child("qps").Index(i), "lists level %s twice", q)
		}
		seen[q.String()] = true
	}
	c.intRange(p.Child("connections"), l.Connections, 1, 10000, "")
	c.intRange(p.Child("payloadBytes"), l.PayloadBytes, 0, 10<<20, "")
	if !strings.HasPrefix(l.Path, "/") {
		c.add(p.Child("path"), "must start with '/' (got %q)", l.Path)
	}
	for _, d := range []struct {
		n string
		v Duration
	}{{"duration", l.Duration}, {"warmUp", l.WarmUp}, {"trimStart", l.TrimStart}, {"trimEnd", l.TrimEnd}} {
		c.nonNegative(p.Child(d.n), d.v)
	}
	if min := l.MinDuration(window); l.Duration.Duration < min {
		c.add(p.Child("duration"), "is %s but warmUp + trimStart + windows.load + trimEnd is %s; raise load.duration or shorten the window", l.Duration, D(min))
	}
	c.intRange(p.Child("clients"), l.Clients, 1, 100, "")
}

// validateTargets checks load.targets and load.login against the app.
func validateTargets(c *collector, p *field.Path, l *LoadSpec, app App) {
	if app.UserApp() && len(l.Targets) == 0 {
		c.add(p.Child("targets"), "is required with app %q: name at least one Service (service, port, path) or url to send load to", app)
	}
	if !app.UserApp() && len(l.Targets) > 0 {
		c.add(p.Child("targets"), "is only used with apps \"manifests\" and \"existing\"; app %q sends load to its entry service (choose the path with load.path): remove load.targets", app)
	}
	names := map[string]bool{}
	for i, t := range l.Targets {
		tp := p.Child("targets").Index(i)
		validateTarget(c, tp, t, app)
		if names[t.Name] {
			c.add(tp.Child("name"), "duplicates target %q; give each target a distinct name", t.Name)
		}
		names[t.Name] = true
		validateHeaders(c, tp.Child("headers"), t.Headers)
	}
	if l.Login != nil {
		validateLogin(c, p.Child("login"), l.Login, app)
	}
}

// validateTarget checks one of load.targets but the uniqueness of its name and its headers' names.
func validateTarget(c *collector, p *field.Path, t LoadTarget, app App) {
	if t.Protocol == ProtocolTCP && len(t.Headers) > 0 {
		c.add(p.Child("headers"), "are not sent with protocol tcp (fortio's echo client has no headers); remove them or use protocol http")
	}
	validateAddress(c, p, t.Service, t.Namespace, t.URL, t.Port, app)
	c.oneOf(p.Child("protocol"), t.Protocol, []string{ProtocolHTTP, ProtocolGRPC, ProtocolTCP})
	if t.Path != "" && !strings.HasPrefix(t.Path, "/") {
		c.add(p.Child("path"), "must start with '/' (got %q)", t.Path)
	}
	if t.Path != "" && t.Protocol != ProtocolHTTP {
		c.add(p.Child("path"), "is only used with protocol http; remove it")
	}
	c.intRange(p.Child("weight"), t.Weight, 1, 1000, "a relative share of the load")
	if !nameRE.MatchString(t.Name) || len(t.Name) > 63 {
		c.add(p.Child("name"), "must be a short name of lower-case letters, digits and '-' (got %q); it labels the target's samples", t.Name)
	}
}

// validateLogin checks load.login: an address as a target's, and a capture the load requests can carry.
func validateLogin(c *collector, p *field.Path, lg *Login, app App) {
	validateAddress(c, p, lg.Service, lg.Namespace, lg.URL, lg.Port, app)
	if lg.Path != "" && !strings.HasPrefix(lg.Path, "/") {
		c.add(p.Child("path"), "must start with '/' (got %q)", lg.Path)
	}
	c.oneOf(p.Child("method"), lg.Method, []string{"GET", "POST"})
	kind, name, ok := strings.Cut(lg.Capture, ":")
	if !ok || name == "" || (kind != "cookie" && kind != "header" && kind != "json") {
		c.add(p.Child("capture"), "must be \"cookie:<name>\", \"header:<name>\" or \"json:<field>\" (got %q)", lg.Capture)
	}
	if msgs := validation.IsHTTPHeaderName(lg.SetHeader); len(msgs) > 0 {
		c.add(p.Child("setHeader"), "must be an HTTP header name (got %q)", lg.SetHeader)
	}
	if !strings.Contains(lg.Value, "{value}") {
		c.add(p.Child("value"), "must contain {value}, where the captured credential goes (got %q)", lg.Value)
	}
	validateHeaders(c, p.Child("headers"), lg.Headers)
}

// validateAddress checks where a target or the login sends requests: a Service (and port) or a URL, one of them.
func validateAddress(c *collector, p *field.Path, service, namespace, rawURL string, port int, app App) {
	switch {
	case service == "" && rawURL == "":
		c.add(p, "sets neither service nor url: name the app's Service (and port) or give a full url")
	case service != "" && rawURL != "":
		c.add(p, "sets both service and url: set one of them")
	}
	if service != "" {
		if msgs := validation.IsDNS1035Label(service); len(msgs) > 0 {
			c.add(p.Child("service"), "must be a Service name (got %q)", service)
		}
		c.intRange(p.Child("port"), port, 1, 65535, "the Service's port number")
	}
	if rawURL != "" {
		u := rawURL
		if !strings.Contains(u, "://") {
			u = "grpc://" + u
		}
		if pu, err := url.Parse(u); err != nil || pu.Host == "" {
			c.add(p.Child("url"), "must be a URL such as http://frontend.shop.svc:80/ or host:port (got %q)", rawURL)
		}
	}
	if namespace != "" && app != AppExisting {
		c.add(p.Child("namespace"), "is only used with app \"existing\" (meshbench places the other apps' Services itself); remove it")
	}
	if namespace != "" && ProtectedNamespace(namespace) {
		c.add(p.Child("namespace"), "is %q, a system namespace: meshbench sends load only to the app's own namespaces (existing.namespaces)", namespace)
	}
}

// validateHeaders checks header names, in key order.
func validateHeaders(c *collector, p *field.Path, h map[string]string) {
	for _, k := range sortedKeys(h) {
		if msgs := validation.IsHTTPHeaderName(k); len(msgs) > 0 {
			c.add(p.Key(k), "is not an HTTP header name")
		}
	}
}
