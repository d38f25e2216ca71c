package scenario

import (
	"crypto/x509"
	"fmt"
	"io"
	"os"
)

// MaxCAFileBytes bounds spec.prometheus.caFile: a bundle of a few hundred certificates (the system's roots are about
// 200 KiB) fits many times over.
const MaxCAFileBytes = 1 << 20

// checkRegular stats a file the scenario names: a problem (the text) unless it is a regular file; what says what the
// file must be, for the hint.
func checkRegular(path, what string) (os.FileInfo, string) {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return nil, fmt.Sprintf("cannot read %q: %v; fix the path or remove the field", path, err)
	case fi.IsDir():
		return nil, fmt.Sprintf("%q is a directory; name %s", path, what)
	case !fi.Mode().IsRegular():
		return nil, fmt.Sprintf("%q is not a regular file; name %s", path, what)
	}
	return fi, ""
}

// checkTokenFile: spec.prometheus.bearerTokenFile is read on every request; a directory, a file that cannot be read
// or an empty one fails every query of the run (collectors/prom sends no "Bearer " without a token), so each is a
// problem before the run starts.
func checkTokenFile(path string) string {
	fi, msg := checkRegular(path, "the token file itself (e.g. /var/run/secrets/kubernetes.io/serviceaccount/token)")
	switch {
	case msg != "":
		return msg
	case fi.Size() == 0:
		return fmt.Sprintf("%q is empty: Prometheus would refuse every query; write the token into it", path)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("cannot read %q: %v; fix its permissions or the path", path, err)
	}
	_ = f.Close()
	return ""
}

// checkCAFile: spec.prometheus.caFile must hold PEM certificates (collectors/prom adds them to the pool that verifies
// Prometheus): a directory, a file above MaxCAFileBytes, or one without a certificate is a problem before the run
// starts, not at its first query.
func checkCAFile(path string) string {
	fi, msg := checkRegular(path, "the PEM file of the CA that signed Prometheus' certificate")
	switch {
	case msg != "":
		return msg
	case fi.Size() > MaxCAFileBytes:
		return fmt.Sprintf("%q is %d bytes; a CA file is at most %d bytes (1 MiB): name the CA's PEM file, not a bundle of everything", path, fi.Size(), MaxCAFileBytes)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("cannot read %q: %v; fix its permissions or the path", path, err)
	}
	defer f.Close()
	pem, err := io.ReadAll(io.LimitReader(f, MaxCAFileBytes))
	if err != nil {
		return fmt.Sprintf("cannot read %q: %v", path, err)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		return fmt.Sprintf("%q holds no PEM certificate (-----BEGIN CERTIFICATE-----); give the CA certificate in PEM, e.g. openssl x509 -in ca.der -inform der -out ca.pem", path)
	}
	return ""
}
