// What the script models know about modules, as data (script-scan.ts reads these sets). "Safe" modules do nothing
// the gate does not see in the script's own text (no network, no other programs, no code loading); "network"
// modules send; every other module a script loads is unmodeled. Edit these lists to teach the gate a module.

const words = (text: string) => new Set(text.split(/\s+/).filter((w) => w.length > 0));

/** Python's standard library top-level modules (sys.stdlib_module_names, 3.11–3.13, public names). */
export const PYTHON_STDLIB = words(`
  abc aifc antigravity argparse array ast asynchat asyncio asyncore atexit audioop base64 bdb binascii bisect
  builtins bz2 cProfile calendar cgi cgitb chunk cmath cmd code codecs codeop collections colorsys compileall
  concurrent configparser contextlib contextvars copy copyreg crypt csv ctypes curses dataclasses datetime dbm
  decimal difflib dis distutils doctest email encodings ensurepip enum errno faulthandler fcntl filecmp fileinput
  fnmatch fractions ftplib functools gc genericpath getopt getpass gettext glob graphlib grp gzip hashlib heapq
  hmac html http idlelib imaplib imghdr imp importlib inspect io ipaddress itertools json keyword lib2to3
  linecache locale logging lzma mailbox mailcap marshal math mimetypes mmap modulefinder msilib msvcrt
  multiprocessing netrc nis nntplib nt ntpath nturl2path numbers opcode operator optparse os ossaudiodev pathlib
  pdb pickle pickletools pipes pkgutil platform plistlib poplib posix posixpath pprint profile pstats pty pwd
  py_compile pyclbr pydoc pydoc_data pyexpat queue quopri random re readline reprlib resource rlcompleter runpy
  sched secrets select selectors shelve shlex shutil signal site smtpd smtplib sndhdr socket socketserver spwd
  sqlite3 sre_compile sre_constants sre_parse ssl stat statistics string stringprep struct subprocess sunau
  symtable sys sysconfig syslog tabnanny tarfile telnetlib tempfile termios textwrap this threading time timeit
  tkinter token tokenize tomllib trace traceback tracemalloc tty turtle turtledemo types typing unicodedata
  unittest urllib uu uuid venv warnings wave weakref webbrowser winreg winsound wsgiref xdrlib xml xmlrpc zipapp
  zipfile zipimport zlib zoneinfo
`);

/** Standard modules (and a few installed test tools) whose use the script's text shows in full. */
export const PYTHON_SAFE = words(`
  __future__ abc argparse array ast base64 binascii bisect builtins bz2 calendar cmath collections
  collections.abc colorsys configparser contextlib contextvars copy csv dataclasses datetime decimal difflib
  enum errno fnmatch fractions functools gc getopt gettext glob graphlib gzip hashlib heapq hmac html html.parser
  io ipaddress itertools json keyword linecache locale logging lzma math mimetypes numbers operator optparse os
  os.path pathlib platform pprint queue random re reprlib secrets shlex shutil signal stat statistics string
  struct sys tempfile textwrap threading time timeit tomllib traceback types typing typing_extensions
  unicodedata unittest unittest.mock urllib.parse uuid warnings weakref xml xml.etree xml.etree.ElementTree
  zipfile tarfile zlib zoneinfo concurrent concurrent.futures
  pytest _pytest
`);

/** Modules that talk to the network. */
export const PYTHON_NETWORK = words(`
  socket socketserver ssl http http.client http.server urllib.request urllib2 urllib3 httplib requests httpx
  aiohttp ftplib smtplib smtpd poplib imaplib nntplib telnetlib paramiko websocket websockets xmlrpc
  xmlrpc.client pycurl boto3 botocore grpc dns webbrowser asyncio
`);

/** Modules that run other programs or code the script's text does not show. */
export const PYTHON_PROGRAMS = words(
  "subprocess pty commands multiprocessing os.system runpy importlib code codeop",
);

/** Node's built-in modules (`node:` or bare). */
export const NODE_BUILTINS = words(`
  assert async_hooks buffer child_process cluster console constants crypto dgram diagnostics_channel dns domain
  events fs http http2 https inspector module net os path perf_hooks process punycode querystring readline repl
  sea sqlite stream string_decoder sys test timers tls trace_events tty url util v8 vm wasi worker_threads zlib
`);

/** Built-ins whose use the script's text shows in full. */
export const NODE_SAFE = words(`
  assert assert/strict buffer console crypto events fs fs/promises os path path/posix path/win32 perf_hooks
  process querystring readline readline/promises stream stream/promises string_decoder test timers
  timers/promises url util zlib
`);

/** Built-ins that run other programs or code the script's text does not show. */
export const NODE_PROGRAMS = words("child_process worker_threads cluster vm inspector module repl wasi");

/** Built-ins that talk to the network. */
export const NODE_NETWORK = words("http http2 https net tls dgram dns undici");

/** Ruby standard libraries whose use the script's text shows in full. */
export const RUBY_SAFE = words(`
  json set fileutils pathname time date yaml psych csv optparse digest securerandom erb ostruct English pp logger
  tempfile tmpdir stringio minitest/autorun test/unit benchmark shellwords forwardable singleton
`);

/** Ruby libraries that talk to the network. */
export const RUBY_NETWORK = words(`
  open-uri net resolv socket webrick faraday httparty rest-client excon typhoeus
`);

/** Perl modules whose use the script's text shows in full. */
export const PERL_SAFE = words(`
  Carp Data::Dumper Getopt::Long Getopt::Std File::Basename File::Spec File::Spec::Functions File::Path
  File::Temp File::Find File::Copy List::Util Scalar::Util POSIX Time::Local Time::HiRes Cwd Encode JSON::PP
  Test::More IO::File IO::Handle Text::Wrap Term::ANSIColor
`);
