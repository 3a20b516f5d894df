/* One site per module and offset, across the processes of a table. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../common/hash.h"
#include "codes.h"
#include "xalloc.h"

/* A site and its code's site; by module and offset, the first site. */
struct slot {
	uint64_t key;		/* a site, or a module-and-offset hash */
	uint64_t site;		/* 0: free */
	const char *module;	/* for module-and-offset slots */
	uint64_t offset;
};

struct table {
	struct slot *s;
	size_t cap, used;
};

struct codes {
	struct symbols *symbols;
	struct table by_site;	/* site -> its code's site */
	struct table by_code;	/* module, offset -> first site */
};

struct codes *codes_new(struct symbols *s)
{
	struct codes *c = xcalloc(1, sizeof(*c));

	c->symbols = s;
	return c;
}

void codes_free(struct codes *c)
{
	if (c) {
		free(c->by_site.s);
		free(c->by_code.s);
	}
	free(c);
}

static bool slot_is(const struct slot *s, uint64_t key, const char *module,
		    uint64_t offset)
{
	return s->key == key && (module == NULL ||
	       (s->offset == offset && strcmp(s->module, module) == 0));
}

/* The slot of key (module, offset: of a code), found or free. */
static struct slot *find(struct table *t, uint64_t key, const char *module,
			 uint64_t offset)
{
	size_t i;

	if ((t->used + 1) * 2 > t->cap) {
		struct table old = *t;

		t->cap = t->cap ? t->cap * 2 : 256;
		t->s = xcalloc(t->cap, sizeof(*t->s));
		for (size_t j = 0; j < old.cap; j++) {
			if (old.s[j].site == 0)
				continue;
			i = hash_mix(old.s[j].key) & (t->cap - 1);
			while (t->s[i].site)
				i = (i + 1) & (t->cap - 1);
			t->s[i] = old.s[j];
		}
		free(old.s);
	}
	i = hash_mix(key) & (t->cap - 1);
	while (t->s[i].site && !slot_is(&t->s[i], key, module, offset))
		i = (i + 1) & (t->cap - 1);
	return &t->s[i];
}

static uint64_t string_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
	return h;
}

uint64_t codes_site(struct codes *c, uint64_t site)
{
	struct slot *s = find(&c->by_site, site, NULL, 0), *k;
	struct frame_info fi;
	uint64_t key;

	if (s->site)
		return s->site;
	symbols_resolve(c->symbols, site, 1, &fi);
	*s = (struct slot){ .key = site, .site = site };
	c->by_site.used++;
	if (fi.module == NULL)
		return site;
	key = string_hash(fi.module) ^ hash_mix(fi.module_offset);
	k = find(&c->by_code, key, fi.module, fi.module_offset);
	if (k->site == 0) {
		*k = (struct slot){ key, site, fi.module, fi.module_offset };
		c->by_code.used++;
	}
	/* The by_site table may have grown meanwhile: find the slot again. */
	find(&c->by_site, site, NULL, 0)->site = k->site;
	return k->site;
}
