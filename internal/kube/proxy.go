package kube

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ProxyGet GETs path through a proxy subresource: kind is "pods", "services" or "nodes"; name may carry a port
// ("istiod-abc:15014", "http:prometheus:9090" for services). It reaches in-cluster endpoints without port-forwards.
func ProxyGet(ctx context.Context, kube kubernetes.Interface, kind, namespace, name, path string, params map[string]string) ([]byte, error) {
	rc := kube.CoreV1().RESTClient()
	if c, ok := rc.(*rest.RESTClient); rc == nil || ok && c == nil {
		// client-go's fake clientset has no REST client: a proxy GET cannot be made through it.
		return nil, fmt.Errorf("GET %s/%s/proxy%s: the clientset has no REST client", kind, name, path)
	}
	req := rc.Get().Resource(kind).Name(name).SubResource("proxy").Suffix(path)
	if namespace != "" {
		req = req.Namespace(namespace)
	}
	for k, v := range params {
		req = req.Param(k, v)
	}
	b, err := req.DoRaw(ctx)
	if err != nil {
		return b, fmt.Errorf("GET %s/%s/proxy%s: %w", kind, name, path, err)
	}
	return b, nil
}
