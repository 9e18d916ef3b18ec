"""An example medeval_kit plugin: ``coefficients`` (``example_maxwell_re``), ``protocols``
(``example_yesno``, template ``yesno.md``) and ``providers`` (``example/<anything>``, canned replies).
medeval_kit imports each module through its entry point, at the first read of that registry."""
