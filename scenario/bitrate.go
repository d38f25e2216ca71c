package scenario

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// maxBitrate is the highest iperf3 target rate accepted, 1 Tbit/s ("1T"): far above any pod network, so a larger
// figure is a typo (a bitrate of 20 digits), not a measurement.
const maxBitrate = 1_000_000_000_000

// bitrateRE is a plain decimal with an optional K/M/G/T suffix. The digit counts bound the value before any
// arithmetic (13 integer digits reach 1e12), so nothing can overflow.
var bitrateRE = regexp.MustCompile(`^([0-9]{1,13})(\.[0-9]{1,12})?([kKmMgGtT]?)$`)

// ParseBitrate reads an iperf3 --bitrate (-b) value in bit/s as iperf3 does (esnet/iperf src/units.c
// unit_atof_rate): decimal K/M/G/T multiples, "0" unlimited; a fraction of a bit/s, an empty value and anything
// above maxBitrate are refused (docs/scenario.md).
func ParseBitrate(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, errors.New(`is required: set a target such as "1G" or "0" (unlimited); iperf3's silent 1 Mibit/s default is not a measurement`)
	}
	m := bitrateRE.FindStringSubmatch(t)
	if m == nil {
		return 0, fmt.Errorf(`%q is not an iperf3 bitrate: use a decimal number with an optional K/M/G/T suffix (decimal multiples: 1G = 10^9 bit/s), e.g. "500M", "1G" or "0" for unlimited`, s)
	}
	n, err := strconv.ParseFloat(m[1]+m[2], 64)
	if err != nil { // unreachable after the pattern; kept so a changed pattern cannot slip a NaN through
		return 0, fmt.Errorf("%q: %w", s, err)
	}
	mult := map[string]float64{"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}[strings.ToLower(m[3])]
	v := n * mult
	switch {
	case v > maxBitrate:
		return 0, fmt.Errorf(`%q is above the limit of 1T (1 Tbit/s); use a rate such as "10G" (decimal suffixes: 1G = 10^9 bit/s)`, s)
	case v != math.Trunc(v):
		return 0, fmt.Errorf(`%q is %s bit/s, not a whole number of bit/s (iperf3 would truncate it to %d): use fewer decimals or a smaller suffix`,
			s, strconv.FormatFloat(v, 'f', -1, 64), uint64(v))
	}
	return uint64(v), nil
}
