package schedule

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"
	// The IANA time zone database inside the binary: --time-zone is checked as the API server checks
	// CronJob.spec.timeZone (time.LoadLocation), also on a machine or in an image without /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/meshbench/meshbench/scenario"
)

var (
	dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// dnsSubdomain is a Secret or StorageClass name (RFC 1123 subdomain; the length is the API server's to check).
	dnsSubdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	// timeZonePart is one component of an IANA time zone name as the API server admits it (k8s.io/kubernetes
	// pkg/apis/batch/validation validateTimeZone, after https://data.iana.org/time-zones/theory.html#naming).
	timeZonePart = regexp.MustCompile(`^[A-Za-z.\-_0-9+]{1,14}$`)
	// baselinePart is one directory name of --baseline: what run IDs and copied run directories are made of.
	baselinePart = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*$`)
)

// Validate reports every problem with the options at once: ValidateFlags' and those that need the scenario.
func (o Options) Validate() error {
	errs := []error{o.ValidateFlags()}
	o = o.withDefaults()
	if o.Scenario == nil {
		errs = append(errs, errors.New("no scenario"))
	}
	if o.Image == "" {
		errs = append(errs, errors.New("no image: set the meshbench container image (--image)"))
	}
	if o.Scenario != nil {
		pr := o.Scenario.Spec.Prometheus
		if (pr.BearerTokenFile != "" || pr.CAFile != "") && o.PrometheusSecret == "" {
			errs = append(errs, fmt.Errorf("spec.prometheus.bearerTokenFile/caFile name files on this machine, which the scheduled pod cannot read, and a token "+
				"must not be copied into the ConfigMap: create a Secret (kubectl -n %s create secret generic meshbench-prometheus --from-file=%s=TOKEN_FILE "+
				"[--from-file=%s=CA_FILE]) and pass --prometheus-secret meshbench-prometheus", o.Namespace, PrometheusTokenKey, PrometheusCAKey))
		}
		errs = append(errs, o.validateManifests()...)
	}
	return errors.Join(errs...)
}

// ValidateFlags reports every problem of the options that does not need the scenario, each naming its flag. Where a
// value ends up in an object the checks are the API server's, so nothing is applied that it would refuse half-way.
func (o Options) ValidateFlags() error {
	o = o.withDefaults()
	var errs []error
	errs = append(errs, checkSchedule(o.Schedule)...)
	if o.TimeZone != "" {
		if err := checkTimeZone(o.TimeZone); err != nil {
			errs = append(errs, err)
		}
	}
	switch {
	case !dnsLabel.MatchString(o.Namespace) || len(o.Namespace) > 63:
		errs = append(errs, fmt.Errorf("--namespace %q: must be a DNS label (lower-case letters, digits and '-', at most 63)", o.Namespace))
	case scenario.ProtectedNamespace(o.Namespace):
		errs = append(errs, fmt.Errorf("--namespace %q: a system namespace (kube-*, istio-*, default, ...): meshbench never creates objects in it or labels it; "+
			"keep the default %q or name a namespace of your own", o.Namespace, DefaultNamespace))
	}
	if o.Image != "" {
		if err := scenario.CheckImageRef(o.Image); err != nil || strings.Contains(o.Image, "://") {
			errs = append(errs, fmt.Errorf("--image %q: must be an image reference such as \"ghcr.io/meshbench/meshbench:v0.1.0\"%s", o.Image, errSuffix(err)))
		}
	}
	if o.PVC == "" && o.Push == "" {
		errs = append(errs, errors.New("results would be lost with the pod: keep them on a PVC (--pvc), push them (--push), or both"))
	}
	if o.Push != "" {
		errs = append(errs, checkPush(o.Push)...)
	}
	if o.PushJob == "" {
		errs = append(errs, errors.New("--push-job is empty: the Pushgateway groups pushes by job; keep the default \"meshbench\""))
	}
	if o.PrometheusSecret != "" && !dnsSubdomain.MatchString(o.PrometheusSecret) {
		errs = append(errs, fmt.Errorf("--prometheus-secret %q: must be a Secret name", o.PrometheusSecret))
	}
	if o.PVC != "" && !dnsLabel.MatchString(o.PVC) {
		errs = append(errs, fmt.Errorf("--pvc %q: must be a DNS label", o.PVC))
	}
	if o.PVCSize != "" {
		if o.PVC == "" {
			errs = append(errs, errors.New("a PVC size needs a PVC name (--pvc)"))
		}
		if q, err := resource.ParseQuantity(o.PVCSize); err != nil || q.Sign() <= 0 {
			errs = append(errs, fmt.Errorf("--pvc-size %q: must be a positive quantity such as \"20Gi\"", o.PVCSize))
		}
	}
	if o.StorageClass != "" && !dnsSubdomain.MatchString(o.StorageClass) {
		errs = append(errs, fmt.Errorf("--storage-class %q: must be a StorageClass name (kubectl get storageclass)", o.StorageClass))
	}
	if len(o.FailIf) > 0 && o.Baseline == "" {
		errs = append(errs, errors.New("regression gates need a baseline run to compare against (--baseline, a run directory on the PVC)"))
	}
	if o.Baseline != "" {
		if o.PVC == "" {
			errs = append(errs, errors.New("a baseline lives on the PVC: set --pvc"))
		}
		if err := checkBaseline(o.Baseline); err != nil {
			errs = append(errs, err)
		}
	}
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("--timeout %s: must be a positive duration, e.g. --timeout 6h", o.Timeout))
	}
	return errors.Join(errs...)
}

// checkSchedule parses the cron expression with the parser the API server validates CronJob.spec.schedule with
// (k8s.io/kubernetes pkg/apis/batch/validation validateScheduleFormat: github.com/robfig/cron/v3 ParseStandard, and
// no TZ= or CRON_TZ= prefix, for which spec.timeZone is the field).
func checkSchedule(s string) []error {
	const hint = "a cron expression of 5 fields (minute hour day-of-month month day-of-week) such as \"0 3 * * *\", or @daily"
	var errs []error
	if strings.Contains(s, "TZ") {
		errs = append(errs, fmt.Errorf("--schedule %q: the API server refuses TZ= and CRON_TZ= in a schedule; give the zone with --time-zone", s))
	} else if _, err := cron.ParseStandard(s); err != nil {
		errs = append(errs, fmt.Errorf("--schedule %q: %v; use %s", s, err, hint))
	}
	return errs
}

// checkTimeZone is the API server's check of CronJob.spec.timeZone (validateTimeZone): an IANA name, not "Local"
// (the controller's zone, which is what leaving --time-zone out means), that the time zone database knows.
func checkTimeZone(tz string) error {
	const hint = "an IANA time zone name such as \"Europe/Paris\" or \"UTC\"; leave --time-zone out for the controller's zone"
	for _, part := range strings.Split(tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !timeZonePart.MatchString(part) {
			return fmt.Errorf("--time-zone %q: unknown time zone; use %s", tz, hint)
		}
	}
	if strings.EqualFold(tz, "Local") {
		return fmt.Errorf("--time-zone %q: the API server refuses Local; use %s", tz, hint)
	}
	if _, err := time.LoadLocation(tz); err != nil {
		return fmt.Errorf("--time-zone %q: %v; use %s", tz, err, hint)
	}
	return nil
}

// checkPush checks the Pushgateway URL the scheduled report step pushes to: an http(s) endpoint, without
// credentials (they would be stored in the CronJob's arguments for anyone who can read it).
func checkPush(raw string) []error {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		return []error{fmt.Errorf("--push %q: credentials in the Pushgateway URL would be stored in the CronJob's arguments for anyone who can read it; "+
			"use a Pushgateway that the scheduled pod reaches without them", u.Redacted())}
	}
	if err := scenario.CheckHTTPURL(raw, "http://pushgateway.monitoring:9091"); err != nil {
		return []error{fmt.Errorf("--push: the Pushgateway URL %w", err)}
	}
	return nil
}

// checkBaseline: --baseline is a run directory on the PVC, relative to RunsDir (or absolute under it), named by plain
// directory names: the scheduled pod reads nothing outside the PVC, and ".." would leave it.
func checkBaseline(b string) error {
	rel := b
	if strings.HasPrefix(b, "/") {
		r, ok := strings.CutPrefix(b, RunsDir+"/")
		if !ok {
			return fmt.Errorf("--baseline %q: an absolute baseline must be under %s, where the PVC is mounted; or give it relative to it", b, RunsDir)
		}
		rel = r
	}
	for _, part := range strings.Split(rel, "/") {
		if !baselinePart.MatchString(part) {
			return fmt.Errorf("--baseline %q: a run directory on the PVC relative to %s, of plain directory names (no \"..\", \".\" or empty parts), "+
				"e.g. \"baseline\" or \"nightly-20261201-030000-3fa2\"", b, RunsDir)
		}
	}
	return nil
}

func errSuffix(err error) string {
	if err == nil {
		return ""
	}
	return "; " + err.Error()
}
