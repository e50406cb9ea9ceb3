/*
 * model_tensors.c: the names of the tensors a rank of the model traces (see model.h,
 * lks_model_tensor): activations and their gradients, the parameters and their gradients,
 * and the FP8 operands of each block's GEMMs, with their sizes, so that a case's checks and
 * planted faults are checked against them when the case is read, before anything trains;
 * and what holds a place of the flat parameter vector (a tensor, or padding).
 */
#include "harness/engine/model.h"

#include <stdio.h>
#include <string.h>

/* Activations and their gradients, beside the parameters and their gradients (lks_model.t,
   "<name>" in the update and "<name>.grad" in backward). dims: 'T'okens, 'H'idden, 'F'fn,
   'V'ocab, 'D' heads x head_dim, 'Q' 3D. Kept in step with lks_forward / lks_backward by
   test_fault and test_model. */
struct lks_act_tensor {
	const char *name;
	char rows, cols;
};

static const struct lks_act_tensor lks_act_tensors[] = {
	{ "embed.out", 'T', 'H' }, { "final_norm.out", 'T', 'H' }, { "head.logits", 'T', 'V' },
	{ "head.logits.grad", 'T', 'V' }, { "final_norm.in.grad", 'T', 'H' }, { NULL, 0, 0 },
}, lks_block_tensors[] = {  /* "blocks.<l>.<name>" */
	{ "norm.out", 'T', 'H' }, { "mlp.up.out", 'T', 'F' }, { "mlp.act.out", 'T', 'F' },
	{ "mlp.down.out", 'T', 'H' }, { "out", 'T', 'H' }, { "mlp.down.in.grad", 'T', 'F' },
	{ "mlp.up.out.grad", 'T', 'F' }, { "mlp.up.in.grad", 'T', 'H' }, { "in.grad", 'T', 'H' },
	{ NULL, 0, 0 },
}, lks_attn_tensors[] = {  /* "blocks.<l>.<name>" with attention */
	{ "attn_norm.out", 'T', 'H' }, { "attn.qkv.out", 'T', 'Q' }, { "attn.core.out", 'T', 'D' },
	{ "attn.proj.out", 'T', 'H' }, { "attn.out", 'T', 'H' }, { "attn.out.grad", 'T', 'H' },
	{ "attn.proj.in.grad", 'T', 'D' }, { "attn.qkv.out.grad", 'T', 'Q' },
	{ "attn.qkv.in.grad", 'T', 'H' }, { NULL, 0, 0 },
};

static size_t lks_dim(const lks_model_cfg *c, long long tokens, char d)
{
	size_t D = c->attention ? (size_t)c->heads * (size_t)c->head_dim : 0;

	switch (d) {
	case 'T': return (size_t)tokens;
	case 'H': return (size_t)c->hidden;
	case 'F': return (size_t)c->ffn;
	case 'D': return D;
	case 'Q': return 3 * D;
	default: return (size_t)c->vocab;
	}
}

const char *lks_model_linear_name(const lks_model_cfg *cfg, int k)
{
	static const char *const mlp[] = { "mlp.up", "mlp.down" };
	static const char *const attn[] = { "attn.qkv", "attn.proj", "mlp.up", "mlp.down" };

	return cfg->attention ? attn[k] : mlp[k];
}

/* name in table: 1 with its element count in *n, else 0 */
static int lks_act_find(const struct lks_act_tensor *t, const lks_model_cfg *c, long long tokens,
                        const char *name, size_t *n)
{
	for (; t->name; t++)
		if (!strcmp(name, t->name)) {
			*n = lks_dim(c, tokens, t->rows) * lks_dim(c, tokens, t->cols);
			return 1;
		}
	return 0;
}

/* The length of "blocks.<l>." at the start of name, l as %d writes it and below layers;
   0 when name does not start so. */
static size_t lks_block_prefix(const lks_model_cfg *c, const char *name)
{
	const char *p = name + 7;
	long l = 0;

	if (strncmp(name, "blocks.", 7) || !(*p >= '0' && *p <= '9') || (p[0] == '0' && p[1] != '.'))
		return 0;
	for (; *p >= '0' && *p <= '9' && l <= c->layers; p++)
		l = l * 10 + (*p - '0');
	return *p == '.' && l < c->layers ? (size_t)(p + 1 - name) : 0;
}

/* The FP8 operands lks_linear names in a block: "mlp.up.fwd.x" and the others, k in
   [0, lks_fp8_operands): linear layer (lks_model_linear_name), role (fwd, dgrad, wgrad),
   operand (a, b). */
static int lks_fp8_operands(const lks_model_cfg *cfg)
{
	return 6 * (cfg->attention ? 4 : 2);
}

static void lks_fp8_operand_name(const lks_model_cfg *cfg, char *buf, size_t size, int k)
{
	int li = k / 6, role = k / 2 % 3, ab = k % 2;

	snprintf(buf, size, "%s.%s.%s", lks_model_linear_name(cfg, li), lks_role_name((lks_role)role),
	         lks_src_name(lks_role_src((lks_role)role, ab)));
}

/* rest, a name after "blocks.<l>.": its k of lks_fp8_operand_name, or -1 */
static int lks_fp8_operand(const lks_model_cfg *cfg, const char *rest)
{
	char buf[64];

	for (int k = 0; k < lks_fp8_operands(cfg); k++) {
		lks_fp8_operand_name(cfg, buf, sizeof(buf), k);
		if (!strcmp(rest, buf))
			return k;
	}
	return -1;
}

int lks_model_fp8_operand(const lks_model_cfg *cfg, const char *name, int *lin, lks_role *role,
                          int *ab)
{
	size_t pre = lks_block_prefix(cfg, name);
	int k = pre ? lks_fp8_operand(cfg, name + pre) : -1;

	if (k < 0)
		return 0;
	*lin = k / 6;
	*role = (lks_role)(k / 2 % 3);
	*ab = k % 2;
	return 1;
}

/* What a parameter's name may be followed by in the trace: nothing (the weight, in the
   update), its gradient, and with trace_optimizer = on its all-reduced gradient and AdamW's
   moments (runner.c). One list for the names told (lks_model_tensor) and the names listed
   (lks_model_tensor_each), so that a check's pattern and its expected tensor agree. */
static const char *const lks_param_suffixes[] = { "", ".grad", ".grad_sum", ".adam_m",
                                                  ".adam_v" };
#define LKS_NPARAM_SUFFIXES (sizeof(lks_param_suffixes) / sizeof(lks_param_suffixes[0]))

int lks_model_tensor_each(const lks_model_cfg *cfg, int (*fn)(void *arg, const char *name),
                          void *arg)
{
	char buf[192], rest[64];
	lks_model m;
	int rc = 0;

	for (const struct lks_act_tensor *t = lks_act_tensors; t->name && !rc; t++)
		rc = fn(arg, t->name);
	for (int l = 0; l < cfg->layers && !rc; l++) {
		for (const struct lks_act_tensor *t = lks_block_tensors; t->name && !rc; t++) {
			snprintf(buf, sizeof(buf), "blocks.%d.%s", l, t->name);
			rc = fn(arg, buf);
		}
		for (const struct lks_act_tensor *t = lks_attn_tensors; cfg->attention && t->name && !rc;
		     t++) {
			snprintf(buf, sizeof(buf), "blocks.%d.%s", l, t->name);
			rc = fn(arg, buf);
		}
		for (int k = 0; k < lks_fp8_operands(cfg) && !rc; k++) {
			lks_fp8_operand_name(cfg, rest, sizeof(rest), k);
			snprintf(buf, sizeof(buf), "blocks.%d.%s", l, rest);
			rc = fn(arg, buf);
		}
	}
	if (rc)
		return rc;
	if (lks_model_init(&m, cfg))
		return -1;
	for (int i = 0; i < m.nt && !rc; i++)
		for (size_t k = 0; k < LKS_NPARAM_SUFFIXES && !rc; k++) {
			snprintf(buf, sizeof(buf), "%s%s", m.t[i].name, lks_param_suffixes[k]);
			rc = fn(arg, buf);
		}
	lks_model_release(&m);
	return rc;
}

int lks_model_param_at(const lks_model *m, size_t i, int *pad)
{
	int k = m->nt - 1;

	while (k > 0 && m->t[k].off > i)  /* in the vector's order; t[0] at 0 */
		k--;
	*pad = i >= m->t[k].off + m->t[k].n;
	return k;
}

static int lks_param_suffix(const char *s)
{
	for (size_t k = 0; k < LKS_NPARAM_SUFFIXES; k++)
		if (!strcmp(s, lks_param_suffixes[k]))
			return 1;
	return 0;
}

int lks_model_tensor(const lks_model_cfg *cfg, long long tokens, const char *name, size_t *n)
{
	size_t pre = lks_block_prefix(cfg, name);
	int kind = LKS_TENSOR_NONE;
	lks_model m;

	if (lks_act_find(lks_act_tensors, cfg, tokens, name, n)
	    || (pre && lks_act_find(lks_block_tensors, cfg, tokens, name + pre, n))
	    || (pre && cfg->attention && lks_act_find(lks_attn_tensors, cfg, tokens, name + pre, n)))
		return LKS_TENSOR_FLOAT;
	if (pre && lks_fp8_operand(cfg, name + pre) >= 0)
		return LKS_TENSOR_FP8;
	if (lks_model_init(&m, cfg))
		return -1;
	for (int i = 0; i < m.nt && !kind; i++) {
		size_t plen = strlen(m.t[i].name);

		if (!strncmp(name, m.t[i].name, plen) && lks_param_suffix(name + plen)) {
			*n = m.t[i].n;
			kind = LKS_TENSOR_FLOAT;
		}
	}
	lks_model_release(&m);
	return kind;
}
