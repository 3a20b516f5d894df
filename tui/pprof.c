/*
 * pprof profiles: samples collected as given, each address turned into a
 * location once (its lines, innermost inlined call first), functions and
 * mappings kept once, strings once; packed with protobuf-c and gzip'd
 * with zlib.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "idmap.h"
#include "pprof.h"
#include "procs.h"
#include "profile.pb-c.h"
#include "xalloc.h"

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Label Label;
typedef Perftools__Profiles__ValueType ValueType;

struct pprof {
	struct symbols *symbols;
	char **strings;
	size_t nstrings, strings_cap;
	struct idmap string_ids;	/* by hash: collisions chain by probing */
	Sample **samples;
	size_t nsamples, samples_cap;
	Location **locations;
	size_t nlocations, locations_cap;
	struct idmap location_ids;	/* by address */
	struct idmap pseudo_ids;	/* locations of no address, by name */
	Function **functions;
	size_t nfunctions, functions_cap;
	struct idmap function_ids;	/* by (name, file) */
	Mapping **mappings;
	size_t nmappings, mappings_cap;
	struct idmap mapping_ids;	/* by module number */
};

static uint64_t string_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

/*
 * The index of s in the string table, added if new (NULL is ""). Equal
 * hashes of different strings take the next key.
 */
static int64_t string_id(struct pprof *p, const char *s)
{
	uint64_t key = string_hash(s ? s : "");
	uint32_t id;

	if (!s || !*s)
		return 0;
	while ((id = idmap_get(&p->string_ids, key)) != 0) {
		if (strcmp(p->strings[id - 1], s) == 0)
			return id - 1;
		key++;
	}
	p->strings = xgrow(p->strings, &p->strings_cap, p->nstrings + 1, 256,
			   sizeof(*p->strings));
	p->strings[p->nstrings++] = xstrdup(s);
	idmap_put(&p->string_ids, key, (uint32_t)p->nstrings);
	return (int64_t)p->nstrings - 1;
}

struct pprof *pprof_new(struct symbols *s)
{
	struct pprof *p = xcalloc(1, sizeof(*p));

	p->symbols = s;
	p->strings = xgrow(NULL, &p->strings_cap, 1, 256, sizeof(*p->strings));
	p->strings[p->nstrings++] = xstrdup("");
	return p;
}

/* The id of function name in file, added if new. */
static uint64_t function_id(struct pprof *p, const char *name,
			    const char *file)
{
	int64_t n = string_id(p, name), f = string_id(p, file);
	uint64_t key = (uint64_t)n << 32 | (uint64_t)f;
	uint32_t id = idmap_get(&p->function_ids, key);
	Function *fn;

	if (id)
		return id;
	fn = xmalloc(sizeof(*fn));
	perftools__profiles__function__init(fn);
	fn->id = p->nfunctions + 1;
	fn->name = fn->system_name = n;
	fn->filename = f;
	p->functions = xgrow(p->functions, &p->functions_cap,
			     p->nfunctions + 1, 64, sizeof(*p->functions));
	p->functions[p->nfunctions++] = fn;
	idmap_put(&p->function_ids, key, (uint32_t)fn->id);
	return fn->id;
}

/* A build id in hex, as pprof and debuginfod spell it. */
static void build_id_hex(const struct symbols_mapping *sm, char *buf,
			 size_t size)
{
	buf[0] = '\0';
	for (size_t i = 0; i < sm->build_id_len && 2 * i + 3 <= size; i++)
		snprintf(buf + 2 * i, 3, "%02x", sm->build_id[i]);
}

/* The mapping of the module holding address, added if new; 0 if none. */
static Mapping *mapping_of(struct pprof *p, uint64_t address)
{
	struct symbols_mapping sm;
	char hex[2 * 64 + 1];
	uint32_t id;
	Mapping *m;

	if (!symbols_mapping(p->symbols, address, &sm))
		return NULL;
	/* Modules of several processes: the process tag keeps them apart. */
	uint64_t key = (uint64_t)procs_of(address) << 32 | sm.index;

	if ((id = idmap_get(&p->mapping_ids, key)) != 0)
		return p->mappings[id - 1];
	build_id_hex(&sm, hex, sizeof(hex));
	m = xmalloc(sizeof(*m));
	perftools__profiles__mapping__init(m);
	m->id = p->nmappings + 1;
	m->memory_start = procs_addr(sm.start);
	m->memory_limit = procs_addr(sm.end);
	m->file_offset = sm.file_offset;
	m->filename = string_id(p, sm.path);
	m->build_id = string_id(p, hex);
	p->mappings = xgrow(p->mappings, &p->mappings_cap, p->nmappings + 1,
			    16, sizeof(*p->mappings));
	p->mappings[p->nmappings++] = m;
	idmap_put(&p->mapping_ids, key, (uint32_t)m->id);
	return m;
}

static Line *line_new(struct pprof *p, const char *function,
		      const char *file, int line)
{
	Line *l = xmalloc(sizeof(*l));

	perftools__profiles__line__init(l);
	l->function_id = function_id(p, function, file);
	l->line = line;
	return l;
}

/* The lines of fi: its function, then each call it was inlined in. */
static void location_lines(struct pprof *p, Location *loc,
			   const struct frame_info *fi)
{
	const char *name = fi->function ? fi->function : fi->symbol;

	if (!name)
		return;
	loc->line = xreallocarray(NULL, 1 + fi->n_inlined, sizeof(*loc->line));
	loc->line[loc->n_line++] = line_new(p, name, fi->file, fi->line);
	for (unsigned i = 0; i < fi->n_inlined; i++) {
		const struct inline_call *c = &fi->inlined_in[i];

		loc->line[loc->n_line++] = line_new(p, c->function ? c->function :
						    "??", c->file, c->line);
	}
}

static Location *location_new(struct pprof *p, struct idmap *ids,
			       uint64_t key)
{
	Location *loc = xmalloc(sizeof(*loc));

	perftools__profiles__location__init(loc);
	loc->id = p->nlocations + 1;
	p->locations = xgrow(p->locations, &p->locations_cap,
			     p->nlocations + 1, 256, sizeof(*p->locations));
	p->locations[p->nlocations++] = loc;
	idmap_put(ids, key, (uint32_t)loc->id);
	return loc;
}

/*
 * The location of a return address, added if new: at the call
 * instruction (address - 1), so that a profiler symbolizing it later
 * finds the call's line.
 */
static uint64_t location_id(struct pprof *p, uint64_t address)
{
	uint32_t id = idmap_get(&p->location_ids, address);
	struct frame_info fi;
	Mapping *m;
	Location *loc;

	if (id)
		return id;
	symbols_resolve(p->symbols, address, 1, &fi);
	loc = location_new(p, &p->location_ids, address);
	loc->address = procs_addr(address) - 1;
	location_lines(p, loc, &fi);
	if ((m = mapping_of(p, address)) != NULL) {
		loc->mapping_id = m->id;
		m->has_functions |= loc->n_line > 0;
		m->has_filenames |= fi.file != NULL;
		m->has_line_numbers |= fi.line > 0;
		m->has_inline_frames = true;
	}
	return loc->id;
}

/* A location of no address, one function named name. */
static uint64_t pseudo_location_id(struct pprof *p, const char *name)
{
	uint64_t key = (uint64_t)string_id(p, name);
	uint32_t id = idmap_get(&p->pseudo_ids, key);
	Location *loc;

	if (id)
		return id;
	loc = location_new(p, &p->pseudo_ids, key);
	loc->line = xmalloc(sizeof(*loc->line));
	loc->line[loc->n_line++] = line_new(p, name, NULL, 0);
	return loc->id;
}

static Label *label_new(struct pprof *p, const char *key, const char *str,
			int64_t num)
{
	Label *l = xmalloc(sizeof(*l));

	perftools__profiles__label__init(l);
	l->key = string_id(p, key);
	l->str = str ? string_id(p, str) : 0;
	l->num = num;
	return l;
}

static void sample_labels(struct pprof *p, Sample *s,
			  const struct pprof_sample *smp)
{
	s->label = xreallocarray(NULL, 4, sizeof(*s->label));
	s->label[s->n_label++] = label_new(p, "type", smp->type, 0);
	if (smp->object)
		s->label[s->n_label++] = label_new(p, "object", smp->object, 0);
	if (smp->role)
		s->label[s->n_label++] = label_new(p, "role", smp->role, 0);
	if (smp->pid)
		s->label[s->n_label++] = label_new(p, "pid", NULL, smp->pid);
}

void pprof_add(struct pprof *p, const struct pprof_sample *smp)
{
	Sample *s = xmalloc(sizeof(*s));
	unsigned n = smp->depth ? smp->depth : 1;

	perftools__profiles__sample__init(s);
	s->location_id = xreallocarray(NULL, n, sizeof(*s->location_id));
	for (unsigned i = 0; i < smp->depth; i++)
		s->location_id[s->n_location_id++] =
			location_id(p, smp->frames[i]);
	if (smp->depth == 0)
		s->location_id[s->n_location_id++] =
			pseudo_location_id(p, smp->where);
	s->value = xreallocarray(NULL, PPROF_VALUES, sizeof(*s->value));
	memcpy(s->value, smp->value, PPROF_VALUES * sizeof(*s->value));
	s->n_value = PPROF_VALUES;
	sample_labels(p, s, smp);
	p->samples = xgrow(p->samples, &p->samples_cap, p->nsamples + 1, 256,
			   sizeof(*p->samples));
	p->samples[p->nsamples++] = s;
}

static ValueType *value_type(struct pprof *p, const char *type,
			     const char *unit)
{
	ValueType *v = xmalloc(sizeof(*v));

	perftools__profiles__value_type__init(v);
	v->type = string_id(p, type);
	v->unit = string_id(p, unit);
	return v;
}

/* data gzip'd into a malloc'ed buffer of *len bytes. */
static uint8_t *gzip(const uint8_t *data, size_t n, size_t *len)
{
	z_stream z = { 0 };
	uint8_t *out;
	size_t cap;

	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		fatal("zlib: cannot start compressing");
	cap = deflateBound(&z, n) + 32;
	out = xmalloc(cap);
	z.next_in = (Bytef *)data;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END)
		fatal("zlib: cannot compress the profile");
	*len = z.total_out;
	deflateEnd(&z);
	return out;
}

/* Free everything the profile's messages hold, and p. */
static void pprof_free(struct pprof *p, Profile *pr)
{
	for (size_t i = 0; i < pr->n_sample_type; i++)
		free(pr->sample_type[i]);
	free(pr->sample_type);
	free(pr->period_type);
	for (size_t i = 0; i < p->nsamples; i++) {
		for (size_t j = 0; j < p->samples[i]->n_label; j++)
			free(p->samples[i]->label[j]);
		free(p->samples[i]->label);
		free(p->samples[i]->location_id);
		free(p->samples[i]->value);
		free(p->samples[i]);
	}
	for (size_t i = 0; i < p->nlocations; i++) {
		for (size_t j = 0; j < p->locations[i]->n_line; j++)
			free(p->locations[i]->line[j]);
		free(p->locations[i]->line);
		free(p->locations[i]);
	}
	for (size_t i = 0; i < p->nfunctions; i++)
		free(p->functions[i]);
	for (size_t i = 0; i < p->nmappings; i++)
		free(p->mappings[i]);
	for (size_t i = 0; i < p->nstrings; i++)
		free(p->strings[i]);
	free(p->samples);
	free(p->locations);
	free(p->functions);
	free(p->mappings);
	free(p->strings);
	idmap_free(&p->string_ids);
	idmap_free(&p->location_ids);
	idmap_free(&p->pseudo_ids);
	idmap_free(&p->function_ids);
	idmap_free(&p->mapping_ids);
	free(p);
}

uint8_t *pprof_finish(struct pprof *p, int64_t time_ns, int64_t duration_ns,
		      size_t *len)
{
	Profile pr = PERFTOOLS__PROFILES__PROFILE__INIT;
	uint8_t *packed, *out;
	size_t n;

	pr.sample_type = xreallocarray(NULL, PPROF_VALUES, sizeof(*pr.sample_type));
	pr.sample_type[pr.n_sample_type++] = value_type(p, "contentions", "count");
	pr.sample_type[pr.n_sample_type++] = value_type(p, "delay", "nanoseconds");
	pr.sample_type[pr.n_sample_type++] = value_type(p, "acquisitions", "count");
	pr.sample_type[pr.n_sample_type++] = value_type(p, "caused", "nanoseconds");
	pr.period_type = value_type(p, "contentions", "count");
	pr.period = 1;
	pr.default_sample_type = string_id(p, "delay");
	pr.time_nanos = time_ns;
	pr.duration_nanos = duration_ns;
	pr.sample = p->samples;
	pr.n_sample = p->nsamples;
	pr.location = p->locations;
	pr.n_location = p->nlocations;
	pr.function = p->functions;
	pr.n_function = p->nfunctions;
	pr.mapping = p->mappings;
	pr.n_mapping = p->nmappings;
	pr.string_table = p->strings;
	pr.n_string_table = p->nstrings;
	n = perftools__profiles__profile__get_packed_size(&pr);
	packed = xmalloc(n ? n : 1);
	perftools__profiles__profile__pack(&pr, packed);
	out = gzip(packed, n, len);
	free(packed);
	pprof_free(p, &pr);
	return out;
}
