/*
 * The JSON writer prints what cJSON_Print() prints for the same tree:
 * trees built at random from awkward numbers, strings of every byte,
 * empty and nested containers, walked into the writer and compared.
 */
#include <cJSON.h>
#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../tui/jsonw.h"
#include "check.h"

static const double numbers[] = {
	0, -0.0, 1, -1, 7, 42, 2147483647.0, 2147483648.0, -2147483648.0,
	-2147483649.0, 4294967296.0, 123456789012.0, 999999999999999.0,
	1e15, 1e15 + 1, 1234567890123456.0, 9007199254740993.0, 1e17,
	1.8446744073709552e19, 0.5, 0.1, 1.0 / 3, 199.88888888888889, 308.6,
	2.5e9, 1e-7, 123.456e-300, 1.5e300, -7.25, 3.0000000000000004,
	NAN, INFINITY, -INFINITY,
};

/* A step of xorshift64. */
static uint64_t next_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* A short string of bytes 1-255, weighted to the ones that get escaped. */
static char *random_string(uint64_t *x)
{
	static const char special[] = "\"\\/\b\f\n\r\t\x01\x1f\x7f\x80\xc3\xa9 ";
	size_t n = next_rand(x) % 12;
	char *s = malloc(n + 1);

	for (size_t i = 0; i < n; i++) {
		uint64_t r = next_rand(x);

		s[i] = r % 3 ? special[r / 3 % (sizeof special - 1)]
			     : (char)(1 + r / 3 % 255);
	}
	s[n] = '\0';
	return s;
}

/* A random value; containers get fewer children deeper down. */
static cJSON *random_value(uint64_t *x, int depth)
{
	uint64_t r = next_rand(x);
	int kind = (int)(r % (depth < 5 ? 7 : 5));
	size_t n = depth < 5 ? next_rand(x) % 4 : 0;
	cJSON *v;
	char *s;

	switch (kind) {
	case 0:
		return cJSON_CreateNumber(numbers[r / 7 % (sizeof numbers /
							  sizeof *numbers)]);
	case 1:
		return cJSON_CreateNumber((double)(int64_t)(r >> (r % 64)) /
					  (r % 5 ? 1 : 1000));
	case 2:
		s = random_string(x);
		v = cJSON_CreateString(s);
		free(s);
		return v;
	case 3:
		return r & 8 ? cJSON_CreateBool(r & 16) : cJSON_CreateNull();
	case 4:
		return cJSON_CreateNumber((double)(r % 100000));
	case 5:
		v = cJSON_CreateArray();
		for (size_t i = 0; i < n; i++)
			cJSON_AddItemToArray(v, random_value(x, depth + 1));
		return v;
	default:
		v = cJSON_CreateObject();
		for (size_t i = 0; i < n; i++) {
			s = random_string(x);
			cJSON_AddItemToObject(v, s, random_value(x, depth + 1));
			free(s);
		}
		return v;
	}
}

/* Write a cJSON tree with the writer. */
static void walk(struct jsonw *w, const char *key, const cJSON *j)
{
	const cJSON *c;

	if (cJSON_IsObject(j) || cJSON_IsArray(j)) {
		if (cJSON_IsObject(j))
			jsonw_object(w, key);
		else
			jsonw_array(w, key);
		cJSON_ArrayForEach(c, j)
			walk(w, cJSON_IsObject(j) ? c->string : NULL, c);
		jsonw_end(w);
	} else if (cJSON_IsString(j)) {
		jsonw_string(w, key, j->valuestring);
	} else if (cJSON_IsNumber(j)) {
		jsonw_number(w, key, j->valuedouble);
	} else if (cJSON_IsBool(j)) {
		jsonw_bool(w, key, cJSON_IsTrue(j));
	} else {
		jsonw_null(w, key);
	}
}

/* The writer prints tree j as cJSON does; a failure says where not. */
static void same_print(struct check_tally *t, const cJSON *j,
		       const char *what, unsigned seed)
{
	char *want = cJSON_Print(j);
	struct jsonw w;
	bool same;
	size_t at = 0;

	jsonw_init(&w);
	walk(&w, NULL, j);
	same = want && strcmp(want, w.text) == 0;
	while (!same && want && want[at] && want[at] == w.text[at])
		at++;
	TALLY(t, same, "%s %u: differs from cJSON_Print at byte %zu: "
	      "expected ...%.40s, got ...%.40s", what, seed, at,
	      want ? want + at : "", w.text + at);
	free(want);
	free(w.text);
}

/* Every number of the list, alone and in an object, as cJSON prints it. */
static void test_numbers(void)
{
	struct check_tally t = { 0 };

	for (size_t i = 0; i < sizeof numbers / sizeof *numbers; i++) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddNumberToObject(o, "n", numbers[i]);
		same_print(&t, o, "number", (unsigned)i);
		same_print(&t, cJSON_GetObjectItem(o, "n"), "bare number",
			   (unsigned)i);
		cJSON_Delete(o);
	}
	CHECK_TALLY(&t, "every number, alone and in an object, as cJSON");
}

/* Empty containers, alone and nested, and the snapshot's shapes. */
static void test_shapes(void)
{
	static const char *const texts[] = {
		"{}", "[]", "[[]]", "[{}]", "{\"a\":{}}", "{\"a\":[]}",
		"[{}, {}, []]", "{\"rows\":[{\"stacks\":[{\"frames\":[{\"x\":1},"
		"{\"x\":2}]}],\"threads\":[]}, {\"h\":[0,1,2]}]}",
		"\"\"", "null", "true", "[1, \"a\", null, false, 0.25]",
	};
	struct check_tally t = { 0 };

	for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
		cJSON *j = cJSON_Parse(texts[i]);

		TALLY(&t, j != NULL, "shape %zu: expected it to parse", i);
		if (j)
			same_print(&t, j, "shape", (unsigned)i);
		cJSON_Delete(j);
	}
	CHECK_TALLY(&t, "every shape as cJSON prints it");
}

/* Two thousand random trees. */
static void test_random_trees(void)
{
	uint64_t x = 0x2545f4914f6cdd1dull;
	struct check_tally t = { 0 };

	for (unsigned i = 0; i < 2000; i++) {
		cJSON *j = random_value(&x, 0);

		same_print(&t, j, "tree", i);
		cJSON_Delete(j);
	}
	CHECK_TALLY(&t, "2000 random trees as cJSON prints them");
}

int main(void)
{
	setlocale(LC_ALL, "");
	test_numbers();
	test_shapes();
	test_random_trees();
	return check_summary();
}
