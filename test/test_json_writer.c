/*
 * test_json_writer.c - the report.json writer's number formatting: its
 * fast path writes exactly what printf's "%.15g" writes, on times of whole
 * nanoseconds (as n / 1e9 and as n * 1e-9), counts, ratios, powers of ten
 * and their neighbours, and doubles of every exponent from random bits (about 900,000 values);
 * and a value written through the writer reads as it should.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "render/json_writer.h"

static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t next_u64(void) { /* splitmix64 */
    uint64_t z = (rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static size_t checked, wrong;

static void same_as_printf(double v) {
    char want[64], got[64];
    snprintf(want, sizeof want, "%.15g", v);
    int len = sps__format_g15(got, v);
    checked++;
    if (strcmp(want, got) != 0 || len != (int)strlen(want)) {
        if (wrong++ < 10)
            fprintf(stderr, "  %a: printf %s, sps__format_g15 %s (%d)\n", v, want, got, len);
    }
}

static void test_times_of_whole_nanoseconds(void) {
    checked = wrong = 0;
    for (int i = 0; i < 100000; i++) {
        uint64_t ns = next_u64() >> (next_u64() % 64); /* every magnitude */
        same_as_printf((double)ns / 1e9);
        same_as_printf((double)ns * 1e-9);
        same_as_printf(-(double)(ns % 1000000000000ull) * 1e-9);
        same_as_printf((double)(ns % 100000) * 1e-6);
    }
    CHECK_EQ_U(wrong, 0);
    CHECK(checked == 400000);
}

static void test_ratios_powers_and_neighbours(void) {
    checked = wrong = 0;
    for (int a = 1; a < 200; a++)
        for (int b = 1; b < 200; b++)
            same_as_printf((double)a / (double)b);
    for (int e = -30; e <= 30; e++) {
        double p = pow(10.0, e);
        double v = p;
        for (int k = 0; k < 4; k++)
            v = nextafter(v, 0.0);
        for (int k = 0; k < 9; k++, v = nextafter(v, INFINITY)) {
            same_as_printf(v);
            same_as_printf(-v);
            same_as_printf(v * 0.5);
            same_as_printf(v * 1.5);
        }
    }
    /* 15- and 16-digit decimals, halfway cases among them */
    for (int i = 0; i < 50000; i++) {
        double m = (double)(next_u64() % 10000000000000000ull);
        int s = (int)(next_u64() % 30);
        same_as_printf(m / pow(10.0, s));
        same_as_printf((m + 0.5) / pow(10.0, s));
    }
    same_as_printf(0.0);
    same_as_printf(-0.0);
    same_as_printf(1e15);
    same_as_printf(999999999999999.0);
    same_as_printf(123456789012345.6);
    same_as_printf(5e-324);
    same_as_printf(1.7976931348623157e308);
    CHECK_EQ_U(wrong, 0);
}

static void test_random_doubles(void) {
    checked = wrong = 0;
    for (int i = 0; i < 100000; i++) {
        uint64_t bits = next_u64();
        double v;
        memcpy(&v, &bits, sizeof v);
        if (isfinite(v))
            same_as_printf(v);
        /* the exponents reports use most: 1e-9 to 1e12 */
        int e = (int)(next_u64() % 70) - 30;
        same_as_printf(ldexp((double)(next_u64() >> 11) * 0x1.0p-53, e));
    }
    CHECK_EQ_U(wrong, 0);
}

static void test_writer_numbers(void) {
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    struct sps_jw w;
    sps__jw_init(&w, f);
    sps__jw_array_flat(&w, NULL);
    sps__jw_number(&w, NULL, 0.000111385);
    sps__jw_number(&w, NULL, 1.2869e-05);
    sps__jw_number(&w, NULL, NAN);
    sps__jw_number(&w, NULL, -42.0);
    sps__jw_int(&w, NULL, INT64_MIN);
    sps__jw_uint(&w, NULL, UINT64_MAX);
    sps__jw_end(&w, ']');
    fclose(f);
    CHECK_MSG(strcmp(text, "[0.000111385, 1.2869e-05, null, -42, -9223372036854775808, 18446744073709551615]\n") == 0,
              "wrote %s", text);
    free(text);
}

int main(void) {
    RUN_TEST(test_times_of_whole_nanoseconds);
    RUN_TEST(test_ratios_powers_and_neighbours);
    RUN_TEST(test_random_doubles);
    RUN_TEST(test_writer_numbers);
    return check_report();
}
