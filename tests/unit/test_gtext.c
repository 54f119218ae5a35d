/* The guest agent's cuts of client text (guestd/gtext.c). */
#include <criterion/criterion.h>
#include <string.h>

#include "guestd.h"

Test(gtext, cut_never_splits_a_character)
{
	const char	*s = "ab\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80z";

	cr_assert_eq(gtext_cut(s, 100), strlen(s));
	cr_assert_eq(gtext_cut(s, 2), 2);
	cr_assert_eq(gtext_cut(s, 3), 2);	/* inside é */
	cr_assert_eq(gtext_cut(s, 4), 4);
	cr_assert_eq(gtext_cut(s, 5), 4);	/* inside € */
	cr_assert_eq(gtext_cut(s, 6), 4);
	cr_assert_eq(gtext_cut(s, 7), 7);
	cr_assert_eq(gtext_cut(s, 10), 7);	/* inside the emoji */
	cr_assert_eq(gtext_cut(s, 11), 11);
	cr_assert_eq(gtext_cut("\x80\x80\x80\x80\x80", 3), 3);
	cr_assert_eq(gtext_cut("", 3), 0);
}

Test(gtext, fit_drops_a_cut_character_at_the_end)
{
	char	 a[] = "ok \xc3", b[] = "ok \xe2\x82", c[] = "ok \xc3\xa9",
		 d[] = "ok", e[] = "\xf0\x9f\x98";

	gtext_fit(a);
	cr_assert_str_eq(a, "ok ");
	gtext_fit(b);
	cr_assert_str_eq(b, "ok ");
	gtext_fit(c);
	cr_assert_str_eq(c, "ok \xc3\xa9");
	gtext_fit(d);
	cr_assert_str_eq(d, "ok");
	gtext_fit(e);
	cr_assert_str_eq(e, "");
}
