# SPDX-License-Identifier: LGPL-2.1-or-later
# bench-shapes' summary of its TSV (bench/shapes.sh): per cell (flush,
# shape, workers) the medians, the pairs' ratios and the oracle. With -v all=1
# one tab-separated row per cell:
#   us shape N bare default none/bare pairs-median oracle/bare pairs-lowest
#   none default/oracle best-fixed best-wait oracle direct%
#   control-pairs-median control-pairs-lowest (0 0 without a control)
# else, for the cell -v us= id= n=, one progress line.
function median(s,    a, n, i, j, t) {
	n = split(s, a, " ")
	for (i = 1; i <= n; i++)
		for (j = i + 1; j <= n; j++)
			if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
	if (!n) return 0
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
# The pairs' ratios of @cond to bare in cell @k, space-separated; their
# lowest in the global lowest (1e9: none).
function ratios(k, cond,    i, r, rs) {
	rs = ""; lowest = 1e9
	for (i = 1; i <= np[k]; i++)
		if ((k, i, "bare") in p && (k, i, cond) in p && p[k, i, "bare"] > 0) {
			r = p[k, i, cond] / p[k, i, "bare"]
			rs = rs " " r
			if (r < lowest) lowest = r
		}
	return rs
}
NR == 1 { next }
!all && ($1 != us || $2 != id || $3 != n) { next }
{
	k = $1 SUBSEP $2 SUBSEP $3
	if (!(k in seen)) { seen[k] = 1; cells[++nc] = k }
	if ($6 == "-") next
	if ($4 == "bare" || $4 == "default" || $4 == "control") {
		v[k, $4] = v[k, $4] " " $6
		p[k, $5, $4] = $6
		np[k] = $5 > np[k] ? $5 : np[k]
		if ($4 == "default" && $7 != "-") { req[k] += $7; dir[k] += $8 }
	} else {
		if ($4 == "none") none[k] = $6
		else {
			w = substr($4, 7)
			if (!((k, "fx") in best) || $6 > best[k, "fx"]) { best[k, "fx"] = $6; best[k, "w"] = w }
		}
	}
}
END {
	for (c = 1; c <= nc; c++) {
		k = cells[c]
		split(k, f, SUBSEP)
		b = median(v[k, "bare"]); d = median(v[k, "default"])
		rs = ratios(k, "default"); lo = lowest
		pm = median(rs)
		cs = ratios(k, "control"); clo = lowest
		o = none[k] + 0
		if (((k, "fx") in best) && best[k, "fx"] > o) o = best[k, "fx"]
		if (all)
			printf "%s\t%s\t%s\t%.1f\t%.1f\t%.3f\t%.3f\t%.3f\t%.3f\t%.1f\t%.3f\t%.1f\t%s\t%.1f\t%s\t%.3f\t%.3f\n",
				f[1], f[2], f[3], b, d, b ? none[k] / b : 0, pm, b ? o / b : 0,
				lo == 1e9 ? 0 : lo, none[k], o ? d / o : 0, best[k, "fx"],
				best[k, "w"], o, req[k] ? sprintf("%.0f", 100 * dir[k] / req[k]) : "-",
				median(cs), clo == 1e9 ? 0 : clo
		else
			printf "  %s us %s N=%s: bare %.0f default %.0f (pairs %.3f, lowest %.3f)%s none %.0f best fixed %.0f (%s us) oracle x%.3f -> default/oracle %.3f\n",
				f[1], f[2], f[3], b, d, pm, lo == 1e9 ? 0 : lo,
				cs == "" ? "" : sprintf(" control %.3f", median(cs)), none[k],
				best[k, "fx"], best[k, "w"], b ? o / b : 0, o ? d / o : 0
	}
}
