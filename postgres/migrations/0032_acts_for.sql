-- Who acts for whom (issue 25): the user an agent token's agent acts for
-- and the user an approval's call was made for ("user:alice"). '' is the
-- operator (user:admin), which is what every older row meant.
ALTER TABLE agent_tokens ADD COLUMN user_name text NOT NULL DEFAULT '';
ALTER TABLE approvals ADD COLUMN user_name text NOT NULL DEFAULT '';
