package prom

import (
	"errors"
	"fmt"
	"testing"
)

// The runner measures a case again only for an error with WindowIncomplete() true (runner's attempts): Collect's
// *IncompleteError must be one, also when wrapped; a failed query must not.
func TestIncompleteErrorIsRetryable(t *testing.T) {
	t.Parallel()
	var inc interface{ WindowIncomplete() bool }
	if err := fmt.Errorf("collect: %w", &IncompleteError{}); !errors.As(err, &inc) || !inc.WindowIncomplete() {
		t.Errorf("%T is not seen as an incomplete window", err)
	}
	inc = nil
	if err := error(&QueryErrors{Failed: []error{errors.New("bad_data")}}); errors.As(err, &inc) {
		t.Errorf("a failed query is taken for an incomplete window")
	}
}
