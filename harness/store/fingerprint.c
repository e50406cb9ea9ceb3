/*
 * fingerprint.c: collects the environment fingerprint (see fingerprint.h).
 * Everything here is read at run time, but the build's own facts, which CMake wrote into
 * build_info.h.
 */
#include "harness/store/fingerprint.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>
#include <xxhash.h>

#include "build_info.h"
#include "kernels/cpu/isa.h"
#include "kernels/err.h"
#ifdef LKS_HAVE_CUDA
#include "kernels/cuda/module.h"
#endif

/* Environment variables that change numerics or the path taken; recorded when set. */
static const char *const lks_numerics_env[] = {
	"LKS_ISA", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "CUDA_VISIBLE_DEVICES",
	"NCCL_ALGO", "NCCL_PROTO", "CUBLAS_WORKSPACE_CONFIG", "CUBLASLT_LOG_LEVEL",
	"NVIDIA_TF32_OVERRIDE", "TORCH_NCCL_NAN_CHECK", "LOCKSTEP_INJECT",
};

void lks_fingerprint_add(lks_fingerprint *fp, const char *key, const char *fmt, ...)
{
	va_list ap;

	if (fp->n == LKS_FP_MAX)
		return;
	snprintf(fp->item[fp->n].key, sizeof(fp->item[0].key), "%s", key);
	va_start(ap, fmt);
	vsnprintf(fp->item[fp->n].value, sizeof(fp->item[0].value), fmt, ap);
	va_end(ap);
	fp->n++;
}

const char *lks_fingerprint_get(const lks_fingerprint *fp, const char *key)
{
	for (int i = 0; i < fp->n; i++)
		if (strcmp(fp->item[i].key, key) == 0)
			return fp->item[i].value;
	return NULL;
}

static void lks_cpu_model(char *buf, size_t n)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];

	snprintf(buf, n, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (strncmp(line, "model name", 10) == 0 && colon) {
			colon += 1 + (colon[1] == ' ');
			colon[strcspn(colon, "\n")] = 0;
			snprintf(buf, n, "%s", colon);
			break;
		}
	}
	fclose(f);
}

static void lks_fingerprint_cuda(lks_fingerprint *fp)
{
#ifdef LKS_HAVE_CUDA
	lks_cuda_info ci;

	lks_fingerprint_add(fp, "cuda.compiler", "%s", LKS_CUDA_COMPILER);
	/* the CUDA libraries' own answers, from the module (loaded here, once) */
	if (lks_cuda_module_info(&ci)) {
		lks_fingerprint_add(fp, "cuda", "not loaded: %s", lks_errmsg());
		return;
	}
	lks_fingerprint_add(fp, "cuda.runtime", "%d.%d", ci.runtime_version / 1000,
	                    ci.runtime_version % 1000 / 10);
	if (ci.driver_version)
		lks_fingerprint_add(fp, "cuda.driver", "%d.%d", ci.driver_version / 1000,
		                    ci.driver_version % 1000 / 10);
	else
		lks_fingerprint_add(fp, "cuda.driver", "none");
	lks_fingerprint_add(fp, "cublaslt", "%zu", ci.cublaslt_version);
	if (ci.nccl_version)  /* NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch */
		lks_fingerprint_add(fp, "nccl", "%d.%d.%d", ci.nccl_version / 10000,
		                    ci.nccl_version / 100 % 100, ci.nccl_version % 100);
	else
		lks_fingerprint_add(fp, "nccl", "not built (NCCL not found)");
	if (ci.device_count > 0)
		lks_fingerprint_add(fp, "gpu.0", "%s (%d devices)", ci.device0, ci.device_count);
	else
		lks_fingerprint_add(fp, "gpu.0", "none: %s", ci.device_error);
#else
	lks_fingerprint_add(fp, "cuda", "not built (CUDA Toolkit not found or LOCKSTEP_CUDA=OFF)");
#endif
}

void lks_fingerprint_collect(lks_fingerprint *fp)
{
	char buf[256];

	fp->n = 0;
	lks_fingerprint_add(fp, "lockstep.version", "%s", LKS_VERSION);
	lks_fingerprint_add(fp, "lockstep.commit", "%s", LKS_GIT_COMMIT);
	lks_fingerprint_add(fp, "build.type", "%s", LKS_BUILD_TYPE);
	lks_fingerprint_add(fp, "compiler", "%s", LKS_C_COMPILER);
	lks_fingerprint_add(fp, "compiler.flags", "%s", LKS_C_FLAGS);
	lks_cpu_model(buf, sizeof(buf));
	lks_fingerprint_add(fp, "cpu.model", "%s", buf);
	lks_fingerprint_add(fp, "cpu.cores", "%ld", sysconf(_SC_NPROCESSORS_ONLN));
	lks_fingerprint_add(fp, "isa.best", "%s", lks_isa_name(lks_isa_best()));
	lks_fingerprint_add(fp, "isa.active", "%s", lks_isa_name(lks_isa_active()));
	if (gethostname(buf, sizeof(buf)) == 0)
		lks_fingerprint_add(fp, "hostname", "%.*s", (int)sizeof(buf) - 1, buf);
	lks_fingerprint_add(fp, "sqlite", "%s", sqlite3_libversion());
	lks_fingerprint_add(fp, "xxhash", "%u.%u.%u", XXH_versionNumber() / 10000,
	                    XXH_versionNumber() / 100 % 100, XXH_versionNumber() % 100);
	lks_fingerprint_add(fp, "inih", "%s", LKS_INIH_VERSION);
	lks_fingerprint_add(fp, "random123", "philox4x32-10 (header-only)");
	lks_fingerprint_cuda(fp);
	for (size_t i = 0; i < sizeof(lks_numerics_env) / sizeof(lks_numerics_env[0]); i++) {
		const char *v = getenv(lks_numerics_env[i]);

		if (v) {
			snprintf(buf, sizeof(buf), "env.%s", lks_numerics_env[i]);
			lks_fingerprint_add(fp, buf, "%s", v);
		}
	}
}

static void lks_json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(out, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(out, "\\u%04x", *s);
		else
			fputc(*s, out);
	}
	fputc('"', out);
}

char *lks_fingerprint_json_add(const char *json, const char *key, const char *value)
{
	const char *end = json + strlen(json);
	size_t len = 0;
	char *s = NULL;
	FILE *f;
	int empty = 1;

	while (end > json && end[-1] != '}')  /* the object's closing brace */
		end--;
	if (end > json)
		end--;
	for (const char *p = json; p < end; p++)
		empty &= *p == '{' || *p == ' ' || *p == '\n' || *p == '\t' || *p == '\r';
	while (end > json && (end[-1] == '\n' || end[-1] == ' '))
		end--;
	if (!(f = open_memstream(&s, &len)))
		return NULL;
	if (end > json)
		fwrite(json, 1, (size_t)(end - json), f);
	else
		fputc('{', f);
	fputs(empty ? "\n  " : ",\n  ", f);
	lks_json_string(f, key);
	fputs(": ", f);
	lks_json_string(f, value);
	fputs("\n}\n", f);
	fclose(f);
	return s;
}

void lks_fingerprint_print(const lks_fingerprint *fp, FILE *out, int json)
{
	if (!json) {
		for (int i = 0; i < fp->n; i++)
			fprintf(out, "%-22s %s\n", fp->item[i].key, fp->item[i].value);
		return;
	}
	fputs("{\n", out);
	for (int i = 0; i < fp->n; i++) {
		fputs("  ", out);
		lks_json_string(out, fp->item[i].key);
		fputs(": ", out);
		lks_json_string(out, fp->item[i].value);
		fputs(i + 1 < fp->n ? ",\n" : "\n", out);
	}
	fputs("}\n", out);
}
