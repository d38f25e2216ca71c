package results

// splitVariants parts items into the plain modes' and the variants', each in input order.
func splitVariants(items []item) (plain, varied []item) {
	for _, it := range items {
		if it.Variant == "" {
			plain = append(plain, it)
		} else {
			varied = append(varied, it)
		}
	}
	return plain, varied
}

// variantDeltas compares every variant series with the same figure of its plain mode: Base and Other are the mode,
// Key.Variant and Key.Mode stay set.
func (sz *summarizer) variantDeltas(plain, variants []Series) []Delta {
	index := make(map[Key]*Series, len(plain))
	for i := range plain {
		index[plain[i].Key] = &plain[i]
	}
	var out []Delta
	for i := range variants {
		v := &variants[i]
		k := v.Key
		k.Variant = ""
		base, ok := index[k]
		if !ok {
			continue
		}
		d := sz.delta(base, v, ModePair{Base: v.Mode, Other: v.Mode})
		d.Key = v.Key
		out = append(out, d)
	}
	return out
}
