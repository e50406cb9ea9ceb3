# trend_common.gp: what the trend plots of the "since last night" section share
# (harness/report/trend_plots.c). Before it the script sets, besides common.gp's:
#   xtics       one label per suite (its id; starred where a fingerprint changed) at 0, 1, ...
#   nfp, fpx    how many suites a fingerprint changed in, and their positions (an array)
#   nsuites     the suites plotted
load common_gp
set xlabel 'suite (* : a fingerprint changed since the suite before)'
set xrange [-0.5:nsuites - 0.5]
# (an empty 'for [j=1:0]' still evaluates its body in gnuplot 5.4, hence the if)
if (nfp > 0) {
	do for [j=1:nfp] {
		set arrow from fpx[j], graph 0 to fpx[j], graph 1 nohead dt 2 lw 2 lc rgb '#c00000'
	}
}
