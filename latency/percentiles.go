package latency

import (
	"errors"
	"strconv"
	"strings"
)

// ParsePercentiles reads latency-tracking-info-percentiles: numbers from 0 to 100, apart.
func ParsePercentiles(v string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Fields(v) {
		p, err := strconv.ParseFloat(f, 64)
		if err != nil || p < 0 || p > 100 {
			return nil, errors.New("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")
		}
		out = append(out, p)
	}
	return out, nil
}

// FormatPercentiles writes percentiles as ParsePercentiles reads them.
func FormatPercentiles(ps []float64) string {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = strconv.FormatFloat(p, 'f', -1, 64)
	}
	return strings.Join(parts, " ")
}
