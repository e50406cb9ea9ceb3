# reldiff.gp: |loss - loss_ref| / |loss_ref| per step of each run against the case's
# reference run, log scale, with the rtol of every close check against the reference as a
# dashed line (the check passes where a curve stays under it; atol is not drawn).
#   ntol, tols  how many rtol values, and the values (an array, when ntol > 0)
#   floor       where an exact agreement (a difference of 0) is drawn: log scale has no 0
load common_gp
set ylabel '|loss - loss_ref| / |loss_ref|'
set logscale y
set format y '%.0e'
# (an empty 'for [j=1:0]' still evaluates its body in gnuplot 5.4, hence the if)
if (ntol > 0) {
	plot for [i=1:n] datafile index (i-1) using 1:2 pt 7 ps 0.4 lw 1.5 title word(names, i), \
		for [j=1:ntol] tols[j] with lines dt 2 lw 2 lc rgb '#c00000' \
		title sprintf('rtol %g', tols[j])
} else {
	plot for [i=1:n] datafile index (i-1) using 1:2 pt 7 ps 0.4 lw 1.5 title word(names, i)
}
