"""What every layer of the suite shares: files written whole or not at all (``files``), JSON read
against committed schemas (``jsonfiles``), the reproduction command builders (``commands``), the
one error type the command line turns into one line and exit 2 (``errors``), the host description
(``hostinfo``), what ``--platform`` means (``platforms``), the process pool that signals stop
cleanly (``pool``).
"""
