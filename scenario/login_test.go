package scenario

import (
	"reflect"
	"testing"
	"time"
)

// Login.SetDefaults is what SetDefaults applies to spec.load.login, and what workloads applies to a login built in
// Go; set fields are kept.
func TestLoginSetDefaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		in, want Login
	}{
		{"cookie capture carried as that cookie", Login{Service: "web", Capture: "cookie:sid"},
			Login{Service: "web", Port: 80, Method: "GET", Capture: "cookie:sid", SetHeader: "Cookie", Value: "sid={value}", Timeout: D(3 * time.Minute)}},
		{"cookie capture into another header: the bare value", Login{Service: "web", Capture: "cookie:sid", SetHeader: "X-Session"},
			Login{Service: "web", Port: 80, Method: "GET", Capture: "cookie:sid", SetHeader: "X-Session", Value: "{value}", Timeout: D(3 * time.Minute)}},
		{"json capture in Cookie: the bare value", Login{Service: "web", Capture: "json:token"},
			Login{Service: "web", Port: 80, Method: "GET", Capture: "json:token", SetHeader: "Cookie", Value: "{value}", Timeout: D(3 * time.Minute)}},
		{"url: no port; set fields kept", Login{URL: "http://a/login", Method: "POST", Capture: "header:X-T", SetHeader: "Authorization", Value: "Bearer {value}", Timeout: D(time.Minute)},
			Login{URL: "http://a/login", Method: "POST", Capture: "header:X-T", SetHeader: "Authorization", Value: "Bearer {value}", Timeout: D(time.Minute)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := tc.in
			got.SetDefaults()
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}
