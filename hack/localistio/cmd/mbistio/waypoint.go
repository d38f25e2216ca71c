package main

// What an upstream Envoy needs to run as Istio's waypoint (a bootstrap template without metadata_discovery, an
// EnvoyFilter removing the peer-metadata filters and istio.hashable_string), generated from the pinned
// istio.io/istio module at build time, never kept as modified copies of upstream files; hack/localistio/README.md
// ("What is real, and what is a stand-in", proxyv2 for waypoints) says why each is needed.

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	sfs "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/set_filter_state/v3"
	hcm "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"sigs.k8s.io/yaml"

	"istio.io/istio/pilot/pkg/networking/core"
	xdsfilters "istio.io/istio/pilot/pkg/xds/filters"
	"istio.io/istio/pkg/config/constants"
	"istio.io/istio/pkg/wellknown"
)

const (
	// metadataDiscoveryGuard is how envoy_bootstrap.json includes the extension (and its stats prefix).
	metadataDiscoveryGuard = "{{- if .metadata_discovery }}"
	// istioHashableString is istio-proxy's set_filter_state factory key; envoyHashableString is upstream Envoy's.
	istioHashableString = "istio.hashable_string"
	envoyHashableString = "envoy.hashable_string"
	// WaypointEnvoyFilterName is the EnvoyFilter istio-up applies in the root namespace.
	WaypointEnvoyFilterName = "meshbench-upstream-envoy-waypoint"
)

// WaypointBootstrapTemplate returns src (the module's tools/packaging/common/envoy_bootstrap.json) with every
// metadata_discovery block disabled. It is an error when src has no such block or still mentions the option after:
// the upstream template changed and the harness must be looked at again.
func WaypointBootstrapTemplate(src []byte) ([]byte, error) {
	n := bytes.Count(src, []byte(metadataDiscoveryGuard))
	if n == 0 {
		return nil, fmt.Errorf("the bootstrap template has no %q block: upstream changed, check pkg/bootstrap and envoy_bootstrap.json at the pin", metadataDiscoveryGuard)
	}
	out := bytes.ReplaceAll(src, []byte(metadataDiscoveryGuard), []byte("{{- if false }}"))
	if bytes.Contains(out, []byte(".metadata_discovery")) {
		return nil, errors.New("the bootstrap template still uses .metadata_discovery outside the blocks replaced: upstream changed")
	}
	return out, nil
}

// connectAuthorityUpstream is istiod's connect_authority filter (pilot/pkg/xds/filters ConnectAuthorityFilter at the
// pin) with every istio.hashable_string factory key replaced by upstream Envoy's envoy.hashable_string. It is an
// error when there is none to replace.
func connectAuthorityUpstream() (*hcm.HttpFilter, error) {
	f := proto.Clone(xdsfilters.ConnectAuthorityFilter).(*hcm.HttpFilter)
	var cfg sfs.Config
	if err := f.GetTypedConfig().UnmarshalTo(&cfg); err != nil {
		return nil, fmt.Errorf("connect_authority's config: %w", err)
	}
	replaced := 0
	for _, v := range cfg.GetOnRequestHeaders() {
		if v.GetFactoryKey() == istioHashableString {
			v.FactoryKey = envoyHashableString
			replaced++
		}
	}
	if replaced == 0 {
		return nil, fmt.Errorf("connect_authority has no %s factory key: upstream changed, check pilot/pkg/xds/filters at the pin", istioHashableString)
	}
	a, err := anypb.New(&cfg)
	if err != nil {
		return nil, err
	}
	f.ConfigType = &hcm.HttpFilter_TypedConfig{TypedConfig: a}
	return f, nil
}

// WaypointEnvoyFilter is the EnvoyFilter (as an object for sigs.k8s.io/yaml) that makes istiod's waypoint
// listeners acceptable to upstream Envoy: istiod patches waypoint listeners in the SIDECAR_INBOUND context, and a
// targetRef to the istio-waypoint GatewayClass in the root namespace covers every waypoint of every revision.
func WaypointEnvoyFilter(rootNamespace, revision string) (map[string]any, error) {
	ca, err := connectAuthorityUpstream()
	if err != nil {
		return nil, err
	}
	b, err := protojson.Marshal(ca)
	if err != nil {
		return nil, err
	}
	var caValue map[string]any
	if err := yaml.Unmarshal(b, &caValue); err != nil {
		return nil, err
	}
	patch := func(listener, filter, op string, value map[string]any) map[string]any {
		p := map[string]any{"operation": op}
		if value != nil {
			p["value"] = value
		}
		return map[string]any{
			"applyTo": "HTTP_FILTER",
			"match": map[string]any{"context": "SIDECAR_INBOUND", "listener": map[string]any{"name": listener,
				"filterChain": map[string]any{"filter": map[string]any{"name": wellknown.HTTPConnectionManager, "subFilter": map[string]any{"name": filter}}}}},
			"patch": p,
		}
	}
	return map[string]any{
		"apiVersion": "networking.istio.io/v1alpha3",
		"kind":       "EnvoyFilter",
		"metadata": map[string]any{"name": WaypointEnvoyFilterName, "namespace": rootNamespace,
			"labels": map[string]any{"app.kubernetes.io/managed-by": fieldManager, "istio.io/rev": revision}},
		"spec": map[string]any{
			"targetRefs": []any{map[string]any{"group": "gateway.networking.k8s.io", "kind": "GatewayClass", "name": constants.WaypointGatewayClassName}},
			"configPatches": []any{
				patch(core.ConnectTerminate, xdsfilters.WaypointDownstreamMetadataFilter.GetName(), "REMOVE", nil),
				patch(core.MainInternalName, xdsfilters.WaypointUpstreamMetadataFilter.GetName(), "REMOVE", nil),
				patch(core.ConnectTerminate, ca.GetName(), "REPLACE", caValue),
			},
		},
	}, nil
}

// cmdWaypoint runs `mbistio waypoint-bootstrap -in F -out F` and `mbistio waypoint-envoyfilter -root-namespace NS -out F`.
func cmdWaypoint(cmd string, args []string) error {
	fs := flag.NewFlagSet(cmd, flag.ExitOnError)
	in := fs.String("in", "", "the module's envoy_bootstrap.json (waypoint-bootstrap)")
	out := fs.String("out", "", "output file (required)")
	root := fs.String("root-namespace", "istio-system", "mesh root namespace (waypoint-envoyfilter)")
	rev := fs.String("revision", "default", "the istiod revision that reads it (label istio.io/rev; waypoint-envoyfilter)")
	_ = fs.Parse(args)
	if *out == "" {
		return errors.New("-out is required")
	}
	var b []byte
	switch cmd {
	case "waypoint-bootstrap":
		src, err := os.ReadFile(*in)
		if err != nil {
			return err
		}
		if b, err = WaypointBootstrapTemplate(src); err != nil {
			return fmt.Errorf("%s: %w", *in, err)
		}
	case "waypoint-envoyfilter":
		ef, err := WaypointEnvoyFilter(strings.TrimSpace(*root), strings.TrimSpace(*rev))
		if err != nil {
			return err
		}
		if b, err = yaml.Marshal(ef); err != nil {
			return err
		}
	}
	return os.WriteFile(*out, b, 0o644)
}
