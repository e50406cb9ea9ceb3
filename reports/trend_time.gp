# trend_time.gp: the mean step time of every run (case/run) in each of the latest suites.
load common_gp[1:strlen(common_gp) - strlen('common.gp')].'trend_common.gp'
set ylabel 'mean step time (s)'
plot for [i=1:n] datafile index (i-1) using 1:2 pt 7 ps 0.6 lw 1.5 title word(names, i)
