// The console's one script, on the pages with something to copy: a new API key, a webhook's signing
// secret, a customer's referral URL (docs/console.md). The value is in a read-only field that works
// without it; this shows a button that copies the field.
for (const button of document.querySelectorAll('button[data-copy]')) {
  const field = document.getElementById(button.dataset.copy);
  const status = document.getElementById(button.dataset.status);
  if (!field || !status) continue;
  field.addEventListener('focus', () => field.select());
  button.hidden = false;
  button.addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText(field.value);
      status.textContent = 'Copied.';
    } catch {
      // No clipboard access (a plain-HTTP address other than localhost): select it to copy by hand.
      field.focus();
      field.select();
      status.textContent = 'Selected: copy it with your keyboard or menu.';
    }
  });
}
