/* render/plan: `gpuwho plan`'s report — the verdict first, then GPUs, GPU memory, KV cache and
 * host memory, each with the numbers behind it — and its JSON (docs/json.md, "plan"). */
#include "json.h"
#include "plan/enginelog.h"
#include "plan/plan.h"
#include "escape.h"
#include "render/render.h"
#include "util.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Prints a line of the report, escaped, `indent` columns in, wrapped to o->width with continuation
 * lines hanging two columns further (up to four). */
static void put_line(FILE *f, const struct render_opts *o, int indent, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void put_line(FILE *f, const struct render_opts *o, int indent, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xvasprintf(fmt, ap);
	va_end(ap);
	static const char spaces[] = "        ";
	int hang = indent < 4 ? indent + 2 : indent;
	fprintf(f, "%.*s", indent, spaces);
	render_put(f, s, o, spaces + sizeof spaces - 1 - hang, indent);
	free(s);
}

static const char *verdict_upper(enum plan_verdict v)
{
	switch (v) {
	case PLAN_FITS: return "fits";
	case PLAN_TIGHT: return "TIGHT";
	case PLAN_NO_FIT: return "DOES NOT FIT";
	default: return "unknown";
	}
}


void render_plan_text(FILE *f, const struct launch *l, const struct plan_result *r, const struct plan_facts *pf,
		      const struct render_opts *o)
{
	char b1[40], b2[40], b3[40], b4[40];
	const char *hue = r->verdict == PLAN_NO_FIT ? C_RED : r->verdict == PLAN_TIGHT ? C_YEL : C_GRN;

	const struct model_config *m = pf->model;
	put_line(f, o, 0, "gpuwho plan: %s (%s), model %s%s%s%s%s", launch_engine_name(l->engine), l->entry, l->model,
		 m ? " (" : "", m && m->model_type ? m->model_type : "", m ? (m->model_type ? ", " : "") : "",
		 m ? (m->mla ? "MLA)" : m->kv_heads == m->heads ? "MHA)" : "GQA)") : "");
	if (pf->pid)
		put_line(f, o, 0, "from the command line of process %ld", pf->pid);
	bool sg = l->engine == LAUNCH_SGLANG;
	put_line(f, o, 0, "TP %d × %s %d × PP %d = %d GPU%s%s; %d on this node", l->tp, sg && l->dp_attention ? "DP-attention" : "DP",
		 l->dp, l->pp, r->gpus, r->gpus == 1 ? "" : "s", sg && l->dp_attention ? " (DP attention shares the TP GPUs)" : "",
		 r->local_gpus);
	/* The verdict first: which resources do not fit. */
	char what[160] = "";
	struct { enum plan_verdict v; const char *name; } res[] = {
		{r->gpus_verdict, "GPUs"}, {r->gpu_verdict, "GPU memory"}, {r->kv_verdict, "KV cache"},
		{r->host_verdict, "host memory"},
	};
	for (size_t i = 0; i < 4; i++)
		if (res[i].v == r->verdict && r->verdict >= PLAN_TIGHT)
			snprintf(what + strlen(what), sizeof what - strlen(what), "%s%s", *what ? ", " : "", res[i].name);
	fprintf(f, "\n%s%sVerdict: %s%s%s%s\n", render_col(o, C_BOLD), render_col(o, hue), verdict_upper(r->verdict),
		*what ? " — " : "", what, render_col(o, C_OFF));

	fprintf(f, "\nGPUs: %s\n", verdict_upper(r->gpus_verdict));
	put_line(f, o, 2, "%s", r->gpus_message);
	if (r->ngpu_ids) {
		char *ids = strv_join(r->gpu_ids, (size_t)r->ngpu_ids, ", ");
		put_line(f, o, 2, "%s GPU%s %s%s", r->gpu_ids_assumed ? "would take" : "takes", r->ngpu_ids == 1 ? "" : "s", ids,
			 pf->cuda_visible ? "" : r->gpu_ids_assumed ? " (assumed: CUDA_VISIBLE_DEVICES unset, GPU count unknown)"
								   : " (CUDA_VISIBLE_DEVICES unset)");
		free(ids);
	}
	if (pf->cuda_visible)
		put_line(f, o, 2, "CUDA_VISIBLE_DEVICES=%s", pf->cuda_visible);

	fprintf(f, "\nGPU memory, per GPU: %s\n", verdict_upper(r->gpu_verdict));
	put_line(f, o, 2, "%s", r->gpu_message);
	if (r->has_gpu_total)
		put_line(f, o, 2, "budget: %s GiB total (%s) × %s %.2f%s = %s GiB; reserve %s GiB", plan_fmt(b1, r->gpu_total / PLAN_GIB, 1),
			 pf->gpu_source, r->fraction_flag, r->fraction, r->fraction_assumed ? " (assumed)" : "",
			 plan_fmt(b2, r->budget / PLAN_GIB, 1), plan_fmt(b3, r->reserve / PLAN_GIB, 1));
	if (r->has_weights && r->weights_estimated)
		put_line(f, o, 2, "weights: %s GiB per GPU of %s GB (%s), %s GiB of it held whole on every rank%s",
			 plan_fmt(b1, r->weights_per_gpu / PLAN_GIB, 1), plan_fmt(b2, pf->weights_total / PLAN_GB, 0),
			 pf->weights_source, plan_fmt(b3, r->replicated / PLAN_GIB, 2), l->has_cpu_offload ? " − --cpu-offload-gb" : "");
	else if (r->has_weights)
		put_line(f, o, 2, "weights: %s GiB per GPU = %s GB (%s) / (tp %d × pp %d)%s", plan_fmt(b1, r->weights_per_gpu / PLAN_GIB, 1),
			 plan_fmt(b2, pf->weights_total / PLAN_GB, 0), pf->weights_source, l->tp, l->pp,
			 l->has_cpu_offload ? " − --cpu-offload-gb" : "");
	else
		put_line(f, o, 2, "weights: unknown (%s)", pf->weights_source);
	if (r->nterms > 1 && r->has_kv_pool) {
		/* In the order the engine counts: the GPU, what is gone before it measures, the fraction's
		 * reserve, the weights, then what the profile adds. */
		static const char *const order[] = {"gpu_total", "driver_reserve", "others", "context", "comm", "reserve",
						    "weights", "replicated", "activation", "cudagraph", "overhead", "kv_cache_memory"};
		size_t nk = sizeof order / sizeof order[0];
		put_line(f, o, 2, "the account, GiB per GPU:");
		/* The known terms in that order, then any other (a term is never left out of the sum). */
		for (size_t k = 0; k <= nk; k++)
			for (int i = 0; i < r->nterms; i++) {
				size_t at = 0;
				while (at < nk && strcmp(r->terms[i].key, order[at]))
					at++;
				if (at == k)
					put_line(f, o, 4, "%+8.2f  %s", r->terms[i].bytes / PLAN_GIB, r->terms[i].how);
			}
		put_line(f, o, 4, "%8.2f  = the KV pool", r->kv_pool / PLAN_GIB);
	}

	fprintf(f, "\nKV cache, per rank: %s\n", verdict_upper(r->kv_verdict));
	put_line(f, o, 2, "%s", r->kv_message);
	if (r->has_cell)
		put_line(f, o, 2, "%s bytes a token = %s", plan_fmt(b1, r->cell_bytes, 0), r->cell_formula);
	if (r->hy_formula)
		put_line(f, o, 2, "layers: %s", r->hy_formula);
	if (r->has_tokens && r->pool_kind == PLAN_POOL_SGLANG_SWA)
		put_line(f, o, 2, "SWA pool: %s tokens (%.2f × the full pool's)", plan_fmt(b1, (double)r->swa_tokens, 0), r->swa_ratio);
	if (r->has_tokens && r->pool_kind == PLAN_POOL_VLLM_HYBRID)
		put_line(f, o, 2, "hybrid pool: %s blocks; a %s-token request reserves %s: max concurrency %.2f, %s tokens as "
			 "vLLM after 0.19 counts them", plan_fmt(b1, (double)r->hy_blocks, 0), plan_fmt(b2, (double)r->max_model_len, 0),
			 plan_fmt(b3, (double)r->hy_blocks_per_req, 0), r->hy_max_concurrency, plan_fmt(b4, (double)r->hy_capacity, 0));
	if (r->has_tokens) {
		put_line(f, o, 2, "pool %s GiB / %s bytes = %s tokens", plan_fmt(b1, fmax(0, r->kv_pool) / PLAN_GIB, 2),
			 plan_fmt(b2, r->cell_bytes, 0), plan_fmt(b3, (double)r->tokens, 0));
		put_line(f, o, 2, "each 0.01 of %s buys %s tokens per rank", r->fraction_flag, plan_fmt(b4, (double)r->tokens_per_point, 0));
		if (l->dp > 1)
			put_line(f, o, 2, "%d DP %s, each with its own pool: %s requests at once in all", l->dp,
				 sg && l->dp_attention ? "attention ranks" : "replicas", plan_fmt(b4, (double)r->concurrency_total, 0));
	}

	fprintf(f, "\nHost memory, for the node: %s\n", verdict_upper(r->host_verdict));
	for (size_t i = 0; i < r->nhost; i++) {
		const struct plan_host_item *it = &r->host[i];
		if (it->message)
			put_line(f, o, 2, "%s", it->message);
	}
	put_line(f, o, 2, "%s", r->host_message);
	if (r->has_host_avail)
		put_line(f, o, 2, "available: %s GB (%s)", plan_fmt(b1, r->host_avail / PLAN_GB, 0), pf->host_source);

	size_t nnotes = r->nnotes + l->nnotes + pf->nnotes;
	if (nnotes || l->nunknown) {
		fprintf(f, "\nNotes:\n");
		for (size_t i = 0; i < pf->nnotes; i++)
			put_line(f, o, 2, "- %s", pf->notes[i]);
		for (size_t i = 0; i < l->nnotes; i++)
			put_line(f, o, 2, "- %s", l->notes[i]);
		for (size_t i = 0; i < r->nnotes; i++)
			put_line(f, o, 2, "- %s", r->notes[i]);
		if (l->nunknown) {
			char *list = strv_join(l->unknown, l->nunknown, ", ");
			put_line(f, o, 2, "- ignored flags plan does not model: %s", list);
			free(list);
		}
	}
}

/* ---------------------------------------------------------------- JSON */

static json_t *jnum(bool has, double v)
{
	if (!has || !isfinite(v))
		return json_null();
	if (v == floor(v) && fabs(v) < 9e15)
		return json_integer((json_int_t)v);
	return json_real(v);
}

json_t *render_plan_json(const struct launch *l, const struct plan_result *r, const struct plan_facts *pf)
{
	const struct model_config *m = pf->model;
	json_t *root = json_object();
	json_object_set_new(root, "schema", json_string("gpuwho.plan"));
	json_object_set_new(root, "schema_version", json_integer(1));
	json_object_set_new(root, "verdict", json_string(plan_verdict_key(r->verdict)));
	json_object_set_new(root, "engine", json_string(l->engine == LAUNCH_SGLANG ? "sglang" : "vllm"));
	json_object_set_new(root, "entry", json_str_or_null(l->entry));
	json_object_set_new(root, "command", json_strs(pf->argv, (size_t)pf->argc));
	json_object_set_new(root, "pid", pf->pid ? json_integer(pf->pid) : json_null());

	json_t *jm = json_object();
	json_object_set_new(jm, "name", json_str_or_null(l->model));
	json_object_set_new(jm, "dir", json_str_or_null(pf->model_dir));
	json_object_set_new(jm, "config", json_str_or_null(pf->config_path));
	json_object_set_new(jm, "model_type", json_str_or_null(m ? m->model_type : NULL));
	json_object_set_new(jm, "attention", m ? json_string(m->mla ? "mla" : m->kv_heads == m->heads ? "mha" : "gqa") : json_null());
	json_object_set_new(jm, "layers", jnum(m, m ? m->layers : 0));
	json_object_set_new(jm, "kv_lora_rank", jnum(m && m->mla, m ? m->kv_lora_rank : 0));
	json_object_set_new(jm, "qk_rope_head_dim", jnum(m && m->mla, m ? m->qk_rope_head_dim : 0));
	json_object_set_new(jm, "kv_heads", jnum(m && !m->mla, m ? m->kv_heads : 0));
	json_object_set_new(jm, "head_dim", jnum(m && !m->mla, m ? m->head_dim : 0));
	json_object_set_new(jm, "v_head_dim", jnum(m && !m->mla, m ? m->v_head_dim : 0));
	json_object_set_new(jm, "dtype", json_str_or_null(m ? m->torch_dtype : NULL));
	json_object_set_new(jm, "weights_bytes", jnum(r->has_weights, pf->weights_total));
	json_object_set_new(jm, "weights_source", json_str_or_null(r->has_weights ? pf->weights_source : NULL));
	json_object_set_new(root, "model", jm);

	json_t *jp = json_object();
	json_object_set_new(jp, "verdict", json_string(plan_verdict_key(r->gpus_verdict)));
	json_object_set_new(jp, "message", json_str_or_null(r->gpus_message));
	json_object_set_new(jp, "tp", json_integer(l->tp));
	json_object_set_new(jp, "dp", json_integer(l->dp));
	json_object_set_new(jp, "pp", json_integer(l->pp));
	json_object_set_new(jp, "dp_attention", json_boolean(l->dp_attention));
	json_object_set_new(jp, "nnodes", json_integer(l->nnodes));
	json_object_set_new(jp, "gpus", json_integer(r->gpus));
	json_object_set_new(jp, "local_gpus", json_integer(r->local_gpus));
	json_object_set_new(jp, "attention_tp", json_integer(r->attn_tp));
	json_object_set_new(jp, "cuda_visible_devices", json_str_or_null(pf->cuda_visible));
	json_object_set_new(jp, "gpu_ids", json_strs(r->gpu_ids, (size_t)r->ngpu_ids));
	json_object_set_new(jp, "gpu_ids_assumed", json_boolean(r->gpu_ids_assumed));
	json_object_set_new(root, "gpus", jp);

	json_t *jg = json_object();
	json_object_set_new(jg, "verdict", json_string(plan_verdict_key(r->gpu_verdict)));
	json_object_set_new(jg, "message", json_str_or_null(r->gpu_message));
	json_object_set_new(jg, "total_bytes", jnum(r->has_gpu_total, r->gpu_total));
	json_object_set_new(jg, "total_source", json_str_or_null(r->has_gpu_total ? pf->gpu_source : NULL));
	json_object_set_new(jg, "fraction", json_real(r->fraction));
	json_object_set_new(jg, "fraction_flag", json_string(r->fraction_flag));
	json_object_set_new(jg, "fraction_assumed", json_boolean(r->fraction_assumed));
	json_object_set_new(jg, "budget_bytes", jnum(r->has_gpu_total, round(r->budget)));
	json_object_set_new(jg, "reserve_bytes", jnum(r->has_gpu_total, round(r->reserve)));
	json_object_set_new(jg, "weights_bytes_per_gpu", jnum(r->has_weights, round(r->weights_per_gpu)));
	json_object_set_new(jg, "overhead_bytes", jnum(true, round(r->overhead)));
	json_object_set_new(jg, "kv_pool_bytes", jnum(r->has_kv_pool, round(r->kv_pool)));
	json_object_set_new(jg, "replicated_bytes_per_gpu", jnum(r->has_weights && r->weights_estimated, round(r->replicated)));
	json_object_set_new(jg, "context_bytes", jnum(true, round(r->context)));
	json_object_set_new(jg, "comm_bytes", jnum(true, round(r->comm)));
	json_object_set_new(jg, "activation_bytes", jnum(true, round(r->activation)));
	json_t *jt = json_array();
	for (int i = 0; i < r->nterms; i++) {
		json_t *t = json_object();
		json_object_set_new(t, "term", json_string(r->terms[i].key));
		json_object_set_new(t, "bytes", json_real(round(r->terms[i].bytes)));
		json_object_set_new(t, "how", json_string(r->terms[i].how));
		json_array_append_new(jt, t);
	}
	json_object_set_new(jg, "terms", jt);
	json_object_set_new(root, "gpu_memory", jg);

	json_t *jk = json_object();
	json_object_set_new(jk, "verdict", json_string(plan_verdict_key(r->kv_verdict)));
	json_object_set_new(jk, "message", json_str_or_null(r->kv_message));
	json_object_set_new(jk, "dtype", json_str_or_null(r->kv_dtype));
	json_object_set_new(jk, "dtype_bytes", jnum(true, r->kv_dtype_bytes));
	json_object_set_new(jk, "bytes_per_token", jnum(r->has_cell, r->cell_bytes));
	json_object_set_new(jk, "formula", json_str_or_null(r->cell_formula));
	json_object_set_new(jk, "tokens_per_rank", jnum(r->has_tokens, (double)r->tokens));
	json_object_set_new(jk, "avg_tokens", json_integer(r->avg_tokens));
	json_object_set_new(jk, "concurrency", jnum(r->has_tokens, (double)r->concurrency));
	json_object_set_new(jk, "concurrency_total", jnum(r->has_tokens, (double)r->concurrency_total));
	json_object_set_new(jk, "concurrency_capped", json_boolean(r->concurrency_capped));
	json_object_set_new(jk, "tokens_per_fraction_point", jnum(r->has_tokens, (double)r->tokens_per_point));
	json_t *jhy = json_object();
	static const char *const pools[] = {"full", "vllm_hybrid", "sglang_swa"};
	json_object_set_new(jhy, "pool", json_string(pools[r->pool_kind]));
	json_object_set_new(jhy, "full_layers", json_integer(r->hy_full));
	json_object_set_new(jhy, "sliding_layers", json_integer(r->hy_swa));
	json_object_set_new(jhy, "chunked_layers", json_integer(r->hy_chunked));
	json_object_set_new(jhy, "linear_layers", json_integer(r->hy_linear));
	json_object_set_new(jhy, "window", jnum(r->hy_window > 0, r->hy_window));
	json_object_set_new(jhy, "layer_bytes", jnum(r->has_cell && r->layer_bytes > 0, r->layer_bytes));
	bool vh = r->pool_kind == PLAN_POOL_VLLM_HYBRID, sw = r->pool_kind == PLAN_POOL_SGLANG_SWA;
	json_object_set_new(jhy, "group_size", jnum(vh, r->hy_group_size));
	json_object_set_new(jhy, "groups", jnum(vh, r->hy_groups));
	json_object_set_new(jhy, "blocks", jnum(vh && r->has_tokens, (double)r->hy_blocks));
	json_object_set_new(jhy, "blocks_per_request", jnum(vh && r->hy_blocks_per_req, (double)r->hy_blocks_per_req));
	json_object_set_new(jhy, "max_concurrency", jnum(vh && r->hy_blocks_per_req, r->hy_max_concurrency));
	json_object_set_new(jhy, "capacity_tokens", jnum(vh && r->hy_blocks_per_req, (double)r->hy_capacity));
	json_object_set_new(jhy, "full_tokens", jnum(sw && r->has_tokens, (double)r->tokens));
	json_object_set_new(jhy, "swa_tokens", jnum(sw && r->has_tokens, (double)r->swa_tokens));
	json_object_set_new(jhy, "swa_full_tokens_ratio", jnum(sw, r->swa_ratio));
	json_object_set_new(jhy, "formula", json_str_or_null(r->hy_formula));
	/* Only a model with layers of more than one kind has a split to show. */
	if (r->hy_full + r->hy_swa + r->hy_chunked + r->hy_linear == 0) {
		json_decref(jhy);
		jhy = json_null();
	}
	json_object_set_new(jk, "hybrid", jhy);
	json_object_set_new(root, "kv_cache", jk);

	json_t *jh = json_object();
	json_object_set_new(jh, "verdict", json_string(plan_verdict_key(r->host_verdict)));
	json_object_set_new(jh, "message", json_str_or_null(r->host_message));
	json_object_set_new(jh, "available_bytes", jnum(r->has_host_avail, r->host_avail));
	json_object_set_new(jh, "available_source", json_str_or_null(r->has_host_avail ? pf->host_source : NULL));
	json_object_set_new(jh, "asked_bytes", jnum(true, round(r->host_total)));
	json_object_set_new(jh, "headroom_bytes", jnum(r->has_host_avail, round(r->host_avail - r->host_total)));
	json_t *items = json_array();
	for (size_t i = 0; i < r->nhost; i++) {
		const struct plan_host_item *it = &r->host[i];
		json_t *ji = json_object();
		json_object_set_new(ji, "flag", json_string(it->flag));
		json_object_set_new(ji, "value", json_real(strtod(it->value, NULL)));
		json_object_set_new(ji, "scope", json_string(it->scope));
		json_object_set_new(ji, "what", json_string(it->what));
		json_object_set_new(ji, "count", json_integer(it->count));
		json_object_set_new(ji, "each_bytes", jnum(it->known, round(it->each_bytes)));
		json_object_set_new(ji, "total_bytes", jnum(it->known, round(it->total_bytes)));
		json_object_set_new(ji, "verdict", json_string(plan_verdict_key(it->verdict)));
		json_object_set_new(ji, "message", json_str_or_null(it->message));
		json_object_set_new(ji, "max_value", jnum(it->has_max, it->max_value));
		json_object_set_new(ji, "max_unit", json_str_or_null(it->max_unit));
		json_array_append_new(items, ji);
	}
	json_object_set_new(jh, "items", items);
	json_object_set_new(root, "host_memory", jh);

	json_object_set_new(root, "unknown_flags", json_strs(l->unknown, l->nunknown));
	json_t *notes = json_strs(pf->notes, pf->nnotes);
	json_t *ln = json_strs(l->notes, l->nnotes);
	json_array_extend(notes, ln);
	json_decref(ln);
	json_t *rn = json_strs(r->notes, r->nnotes);
	json_array_extend(notes, rn);
	json_decref(rn);
	json_object_set_new(root, "notes", notes);
	return root;
}

static void fmt_value(char *buf, const struct log_row *w, bool has, double v)
{
	char b[40];
	if (!has)
		snprintf(buf, 40, "-");
	else if (!strcmp(w->key, "tokens") || !strcmp(w->key, "swa_tokens"))
		snprintf(buf, 40, "%s", plan_fmt(b, v, 0));
	else if (!strcmp(w->key, "concurrency"))
		snprintf(buf, 40, "%.2fx", v);
	else
		snprintf(buf, 40, "%s GiB", plan_fmt(b, v / PLAN_GIB, 2));
}

void render_plan_log_text(FILE *f, const char *path, const struct engine_log *lg, const struct log_compare *c,
			  const struct render_opts *o)
{
	char *p = escape_term(path, strlen(path));
	fprintf(f, "\nAgainst the log %s (%s, %d memory line%s):\n", p, launch_engine_name(lg->engine), lg->lines,
		lg->lines == 1 ? "" : "s");
	free(p);
	/* A table: fixed columns, so printed as is (every cell is a number or one of our own labels). */
	fprintf(f, "  %-28s %14s %14s %8s\n", "", "predicted", "printed", "error");
	for (int i = 0; i < c->nrows; i++) {
		const struct log_row *w = &c->rows[i];
		char a[40], b[40], e[16] = "";
		fmt_value(a, w, w->has_predicted, w->predicted);
		fmt_value(b, w, w->has_logged, w->logged);
		if (w->has_predicted && w->has_logged && w->logged > 0)
			snprintf(e, sizeof e, "%+.1f%%", w->error * 100);
		fprintf(f, "  %-28.28s %14s %14s %8s\n", w->what, a, b, e);
	}
	if (lg->refused)
		put_line(f, o, 2, "the engine refused to start: one max_model_len request did not fit");
	if (lg->tokens_from_blocks)
		put_line(f, o, 2, "printed tokens from \"# GPU blocks\" × the block size");
	put_line(f, o, 2, "%s", c->summary);
	if (c->has_error)
		put_line(f, o, 2, "token count %s by %.1f%%%s", c->error >= 0 ? "over-predicted" : "under-predicted",
			 fabs(c->error) * 100, fabs(c->error) <= 0.10 ? " (within 10%)" : " (more than 10%)");
}

json_t *render_plan_log_json(const char *path, const struct engine_log *lg, const struct log_compare *c)
{
	json_t *j = json_object();
	json_object_set_new(j, "file", json_str_or_null(path));
	json_object_set_new(j, "engine", json_string(lg->engine == LAUNCH_SGLANG ? "sglang" : lg->engine == LAUNCH_VLLM ? "vllm" : "unknown"));
	if (lg->version) {
		char v[32];
		snprintf(v, sizeof v, "%d.%d.%d", lg->version / 1000000, lg->version / 1000 % 1000, lg->version % 1000);
		json_object_set_new(j, "version", json_string(v));
	} else {
		json_object_set_new(j, "version", json_null());
	}
	json_object_set_new(j, "lines", json_integer(lg->lines));
	json_object_set_new(j, "refused", json_boolean(lg->refused));
	json_t *rows = json_array();
	for (int i = 0; i < c->nrows; i++) {
		const struct log_row *w = &c->rows[i];
		json_t *r = json_object();
		json_object_set_new(r, "term", json_string(w->key));
		json_object_set_new(r, "what", json_string(w->what));
		bool exact = !strcmp(w->key, "concurrency");   /* a ratio, not bytes or tokens */
		json_object_set_new(r, "predicted", jnum(w->has_predicted, exact ? w->predicted : round(w->predicted)));
		json_object_set_new(r, "printed", jnum(w->has_logged, exact ? w->logged : round(w->logged)));
		json_object_set_new(r, "error", jnum(w->has_predicted && w->has_logged && w->logged > 0, w->error));
		json_array_append_new(rows, r);
	}
	json_object_set_new(j, "terms", rows);
	json_object_set_new(j, "tokens_error", jnum(c->has_error, c->error));
	json_object_set_new(j, "summary", json_string(c->summary));
	return j;
}
