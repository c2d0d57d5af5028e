// A team's dashboard (tunetrack ui --team): who is signed in, and the way out, in every page's header.
// A dashboard of one has nobody signed in, and shows neither.
const server = await fetch("/api/server").then(r => (r.ok ? r.json() : {}), () => ({}));
if (server.person) {
  const form = document.createElement("form");
  form.method = "post";
  form.action = "/signout";
  form.className = "signedin";
  const who = document.createElement("span");
  who.textContent = server.person;  // text: a name is never markup
  const out = document.createElement("button");
  out.type = "submit";
  out.id = "signout";
  out.textContent = "sign out";
  form.append(who, out);
  document.querySelector("header").append(form);
}
