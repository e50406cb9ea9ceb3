# trend_reldiff.gp: per run, the largest |loss - loss(prev)| / |loss(prev)| over the steps of
# the same run in the suite before, log scale; a run equal bit for bit is drawn at floor, one
# whose loss went NaN or came back (on one side only: infinitely apart) at ceiling.
load common_gp[1:strlen(common_gp) - strlen('common.gp')].'trend_common.gp'
set ylabel 'max |loss - loss(prev)| / |loss(prev)|'
set logscale y
set format y '%.0e'
set yrange [floor / 10:*]
plot for [i=1:n] datafile index (i-1) using 1:2 pt 7 ps 0.6 lw 1.5 title word(names, i), \
	floor with lines dt 3 lc rgb '#888888' title sprintf('bit for bit (drawn at %g)', floor), \
	ceiling with lines dt 3 lc rgb '#cc4444' title sprintf('NaN on one side (drawn at %g)', ceiling)
