/*
 * noexchange_preload.c: a shared library that makes renameat2 fail with EINVAL, as it
 * does on a file system without RENAME_EXCHANGE (NFS, older kernels), so that
 * test_report_swap.c can show 'lockstep report' swapping its folder in by its other way
 * (two renames). The program reaches renameat2 through syscall(2), which this library
 * stands in for; every other system call goes on to the C library's syscall. It says on
 * stderr that it refused one, so that a test knows the other way was taken.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <unistd.h>
#include <sys/syscall.h>

long syscall(long number, ...)
{
	long (*next)(long, ...) = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	long a[6];
	va_list ap;

	/* six arguments, as many as any system call takes: those not passed are not read by
	   the call made with them */
	va_start(ap, number);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
#ifdef SYS_renameat2
	if (number == SYS_renameat2) {
		static const char said[] = "noexchange: renameat2 refused\n";

		if (write(2, said, sizeof(said) - 1) < 0)
			(void)0;
		errno = EINVAL;
		return -1;
	}
#endif
	if (!next) {
		errno = ENOSYS;
		return -1;
	}
	return next(number, a[0], a[1], a[2], a[3], a[4], a[5]);
}
